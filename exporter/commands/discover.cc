#include "exporter/commands/discover.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>

#include "exporter/commands/spec_merge.h"
#include "schedwatch/duration.h"
#include "schedwatch/schedule.h"
#include "sources/catalog.h"
#include "sources/module.h"

namespace schedwatch {
namespace {

constexpr std::size_t kMaxRoleBase = 59;

bool IsUtc(const std::string& zone) { return zone.empty() || zone == "UTC" || zone == "Etc/UTC"; }

// One object's place in the outcome.
struct Placed {
  const SourceSpec* source = nullptr;
  Discoverer* discoverer = nullptr;
  FoundObject object;
  std::string role;  // assigned
  std::string spec_version;
  bool in_spec = false;  // the spec has the role already: nothing to add
};

// Lines of text ("a\nb").
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// A schedule as YAML: one quoted value, or a flow list of a systemd timer's OnCalendar lines.
std::string ScheduleYaml(const std::string& schedule) {
  if (schedule == kMonotonicSchedule) return schedule;
  if (schedule.find('\n') == std::string::npos) return QuotedScalar(schedule);
  std::string list;
  for (const auto& line : Lines(schedule)) list += (list.empty() ? "[" : ", ") + QuotedScalar(line);
  return list + "]";
}

// The max_runtime a job gets: the suggested one, else the built-in default.
constexpr std::int64_t kDefaultMaxRuntime = 30 * 60;

JobText JobFor(const Placed& placed) {
  JobText job;
  job.comments.push_back(placed.object.id);
  job.fields = {{"role", YamlScalar(placed.role)},
                {"source", YamlScalar(placed.source->name)},
                {"schedule", ScheduleYaml(placed.object.schedule)}};
  job.field_comments = {"", "", placed.object.repeat_from};
  if (!IsUtc(placed.object.timezone)) {
    job.fields.emplace_back("timezone", YamlScalar(placed.object.timezone));
    job.field_comments.emplace_back("the scheduler's zone");
  }
  job.fields.emplace_back("spec_version", QuotedScalar(placed.spec_version));
  job.field_comments.emplace_back(placed.object.marked ? "from its marker" : "");
  for (const auto& [key, value] : placed.object.job_keys) {
    job.fields.emplace_back(key, YamlScalar(value));
    job.field_comments.emplace_back("");
  }
  std::int64_t max_runtime = kDefaultMaxRuntime;
  if (placed.object.longest_run_seconds) {
    max_runtime = SuggestedMaxRuntime(*placed.object.longest_run_seconds);
    job.fields.emplace_back("max_runtime", FormatDuration(max_runtime));
    job.field_comments.push_back(
        fmt::format("twice the longest of {} run{} seen ({}), rounded up to a minute",
                    placed.object.finished_runs, placed.object.finished_runs == 1 ? "" : "s",
                    FormatDuration(*placed.object.longest_run_seconds)));
  }
  if (placed.object.repeat_seconds) {
    // What the spec derives from a period, from the scheduler's own repetition instead.
    job.fields.emplace_back("stale_after",
                            FormatDuration(2 * *placed.object.repeat_seconds + max_runtime));
    job.field_comments.push_back(
        fmt::format("twice how often it repeats ({}), plus max_runtime ({})",
                    FormatDuration(*placed.object.repeat_seconds), FormatDuration(max_runtime)));
  }
  return job;
}

// Why the spec could not hold a systemd job with these OnCalendar lines; "" when it can.
std::string UnschedulableCalendar(const FoundObject& object) {
  if (object.schedule == kMonotonicSchedule) {
    if (object.repeat_seconds) return "";
    return fmt::format("no repeating trigger ({}), and so no period to watch", object.repeat_from);
  }
  std::vector<CalendarSpec> calendars;
  for (const auto& line : Lines(object.schedule)) {
    auto calendar = CalendarSpec::Parse(line);
    if (!calendar) {
      return fmt::format("its OnCalendar=\"{}\" does not parse: {}", line, calendar.error());
    }
    calendars.push_back(std::move(*calendar));
  }
  const date::time_zone* zone = FindZone(object.timezone.empty() ? "UTC" : object.timezone);
  if (zone == nullptr) return fmt::format("its time zone \"{}\" is unknown", object.timezone);
  if (!Schedule(std::move(calendars), zone).Period(kPeriodReference)) {
    return "its OnCalendar= lines fire fewer than twice a year: no period to watch";
  }
  return "";
}

// Why the spec could not hold a job with this object's schedule and zone; "" when it can.
std::string Unschedulable(const FoundObject& object, const SourceDescriptor& descriptor) {
  if (descriptor.dialect() == CronDialect::kSystemdCalendar) return UnschedulableCalendar(object);
  auto expression = CronExpression::Parse(object.schedule, descriptor.dialect());
  if (!expression) {
    return fmt::format("its schedule \"{}\" does not parse: {}", object.schedule,
                       expression.error());
  }
  const date::time_zone* zone = FindZone(object.timezone.empty() ? "UTC" : object.timezone);
  if (zone == nullptr) return fmt::format("its time zone \"{}\" is unknown", object.timezone);
  if (expression->is_reboot()) {
    return descriptor.allows_reboot() ? "" : "@reboot, which this scheduler does not run";
  }
  if (!Schedule(*expression, zone, descriptor.dst_policy()).Next(kPeriodReference)) {
    return fmt::format("its schedule \"{}\" never fires", object.schedule);
  }
  return "";
}

// `text` as comment lines. What YAML also takes for a line break (CR, NEL, LS, PS: a crontab
// file's name may hold one) ends a line too, or the rest would be read as YAML.
std::string CommentLines(std::string text, const std::string& indent = "") {
  for (const char* line_break : {"\r", "\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
    for (std::size_t at = text.find(line_break); at != std::string::npos;
         at = text.find(line_break, at + 1)) {
      text.replace(at, std::strlen(line_break), "\n");
    }
  }
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += indent + "# " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

DiscoverOutcome Discover(const DiscoverRequest& request) {
  DiscoverOutcome outcome;
  std::string report;
  auto make = request.make_discoverer;
  if (!make) {
    make = [](const SourceOptions& options) -> Result<std::unique_ptr<Discoverer>> {
      const SourceModule* module = FindSourceModule(options.spec->type);
      if (module == nullptr || !module->make_discoverer) {
        return Error{
            fmt::format("discover cannot read sources of type \"{}\" yet", options.spec->type)};
      }
      return module->make_discoverer(options);
    };
  }
  const bool merging = !request.merge_into.empty();

  // Read every source asked for, in name order.
  std::vector<std::unique_ptr<Discoverer>> discoverers;
  std::vector<Placed> placed;
  std::vector<std::string> not_jobs;  // comments: what is no job, and why
  std::string chosen;                 // a draft's settings discover chose, as its block's lines
  for (const auto& [name, source] : request.spec->sources) {
    if (!request.sources.empty() &&
        std::find(request.sources.begin(), request.sources.end(), name) == request.sources.end()) {
      continue;
    }
    SourceOptions options;
    options.spec = &source;
    for (const auto& job : request.spec->jobs) {
      if (job.source == name) options.jobs.push_back(&job);
    }
    auto discoverer = make(options);
    Result<Discovery> discovery = discoverer
                                      ? (*discoverer)->Discover(ListContext{request.now, nullptr})
                                      : Result<Discovery>(Error{discoverer.error()});
    if (!discovery) {
      report +=
          fmt::format("source \"{}\" ({}): not read: {}\n", name, source.type, discovery.error());
      outcome.exit_code = 1;
      continue;
    }
    std::size_t runnable = 0;
    const SourceDescriptor* descriptor = BuiltInCatalog().Find(source.type);
    for (auto& object : discovery->objects) {
      if (object.not_run_because.empty() && descriptor != nullptr) {
        object.not_run_because = Unschedulable(object, *descriptor);
      }
      if (!object.not_run_because.empty()) {
        not_jobs.push_back(
            fmt::format("not a job ({}): {}: {}", name, object.id, object.not_run_because));
        continue;
      }
      ++runnable;
      placed.push_back({&source, discoverer->get(), std::move(object), "", "", false});
    }
    report += fmt::format("source \"{}\" ({}): {} object{}, {} not run\n", name, source.type,
                          runnable, runnable == 1 ? "" : "s", discovery->objects.size() - runnable);
    for (const auto& note : discovery->notes) {
      report += fmt::format("source \"{}\": {}\n", name, note);
    }
    for (const auto& setting : discovery->settings) {
      std::string why = setting.why;
      std::replace(why.begin(), why.end(), '\n', ' ');
      if (setting.key.empty()) {
        report += fmt::format("source \"{}\": {}\n", name, why);
      } else {
        report += fmt::format("source \"{}\": {}{}: {} ({})\n", name,
                              merging ? "set in its block " : "", setting.key, setting.value, why);
      }
      // A draft holds the one source it read: its block ends the draft's sources.
      if (!merging) {
        chosen += CommentLines(setting.why, "    ");
        if (!setting.key.empty()) chosen += fmt::format("    {}: {}\n", setting.key, setting.value);
      }
    }
    discoverers.push_back(std::move(*discoverer));
  }

  // Roles: a marker's role is kept; the others get their suggestion, made valid and unique.
  // A second object claiming a role already claimed is no job: the role is duplicate.
  std::map<std::string, std::string> taken_by;  // role -> id of the first claim
  for (auto it = placed.begin(); it != placed.end();) {
    if (it->object.role.empty()) {
      ++it;
      continue;
    }
    auto [first, inserted] = taken_by.emplace(it->object.role, it->object.id);
    if (!inserted) {
      not_jobs.push_back(fmt::format("not a job ({}): {}: its marker claims role {}, as {} does",
                                     it->source->name, it->object.id, it->object.role,
                                     first->second));
      it = placed.erase(it);
      continue;
    }
    it->role = it->object.role;
    ++it;
  }
  std::set<std::string> taken;
  for (const auto& entry : taken_by) taken.insert(entry.first);
  for (auto& item : placed) {
    if (!item.object.role.empty()) continue;
    std::string base = RoleNameFrom(item.object.suggested_role);
    for (int n = 1;; ++n) {
      std::string role = n == 1 ? base : fmt::format("{}-{}", base, n);
      const JobSpec* existing = request.spec->FindJob(role);
      // A role the spec has for another source is not this object's.
      if (taken.count(role) || (existing != nullptr && existing->source != item.source->name)) {
        continue;
      }
      item.role = role;
      taken.insert(role);
      break;
    }
  }
  std::vector<const Placed*> added;
  for (auto& item : placed) {
    const JobSpec* existing = request.spec->FindJob(item.role);
    item.in_spec = existing != nullptr;
    item.spec_version = existing != nullptr                 ? existing->spec_version
                        : !item.object.spec_version.empty() ? item.object.spec_version
                                                            : "1";
    if (!item.in_spec) added.push_back(&item);
  }

  // The spec: a draft, or the file with what it lacks.
  std::vector<JobText> jobs;
  for (const Placed* item : added) jobs.push_back(JobFor(*item));
  const std::string header = "added by schedwatch_exporter discover: review each job";
  if (merging) {
    auto merged = AppendJobs(request.merge_into, jobs, header);
    if (!merged) {
      outcome.spec_text = request.merge_into;
      outcome.report = report + fmt::format("cannot add to the spec: {}\n", merged.error());
      outcome.exit_code = 1;
      return outcome;
    }
    outcome.spec_text = *merged;
  } else {
    std::string text =
        "# A draft written by `schedwatch_exporter discover` from what the schedulers hold now.\n"
        "# Review every job (should it run? is its schedule right?), commit this file, then add\n"
        "# the markers that tie each object to its role.\n"
        "version: 1\n"
        "sources:\n" +
        request.draft_sources + chosen;
    if (jobs.empty()) {
      text += "jobs: []\n";
    } else {
      text += "jobs:\n";
      for (const auto& job : jobs) text += RenderJobBlock(job, 2);
    }
    outcome.spec_text = text;
  }
  // What is no job: comments at the end of a draft; in the report when merging, so that the
  // file changes only by its new jobs.
  for (const auto& line : not_jobs) {
    if (merging) {
      report += line + "\n";
    } else {
      outcome.spec_text += CommentLines(line);
    }
  }
  // What is written must be a spec check accepts, with every job it had and the new ones.
  auto reread = ParseSpec(outcome.spec_text, "the discovered spec", BuiltInCatalog());
  if (!reread ||
      reread->jobs.size() != request.spec->jobs.size() * (merging ? 1 : 0) + added.size()) {
    outcome.report = report + fmt::format("discover wrote a spec that does not read back{}{}\n",
                                          reread ? "" : ": ", reread ? "" : reread.error());
    outcome.exit_code = 1;
    if (merging) outcome.spec_text = request.merge_into;
    return outcome;
  }

  if (added.empty()) {
    report += merging ? "nothing to add: the spec has every job discovered\n" : "no jobs found\n";
  } else {
    report += fmt::format("{} {} job{}:", merging ? "added" : "drafted", added.size(),
                          added.size() == 1 ? "" : "s");
    for (const Placed* item : added) report += " " + item->role;
    report += "\n";
  }

  // Markers for every object without one.
  std::map<Discoverer*, std::vector<MarkerToWrite>> to_write;
  std::string instructions;
  std::size_t unmarked = 0;
  bool writable = false;  // some of them --write-markers could write (crontab files)
  for (const auto& item : placed) {
    if (item.object.marked) continue;
    ++unmarked;
    writable = writable || item.discoverer->CanWriteMarkers();
    if (request.write_markers && item.discoverer->CanWriteMarkers()) {
      to_write[item.discoverer].push_back({item.object, item.role, item.spec_version});
      continue;
    }
    instructions += item.discoverer->MarkerInstructions(item.object, item.role, item.spec_version);
  }
  if (placed.empty()) {
    // Nothing read holds a marker or lacks one: no word on markers (a source not read says so).
  } else if (unmarked == 0) {
    report += "markers: every object has one\n";
  } else if (!instructions.empty()) {
    report += fmt::format("markers to add{}:\n{}",
                          request.write_markers ? " by hand"
                          : writable            ? " (or --write-markers for files)"
                                                : "",
                          instructions);
  }
  for (auto& [discoverer, markers] : to_write) {
    auto written = discoverer->WriteMarkers(markers);
    if (!written) {
      report += fmt::format("markers not written: {}\n", written.error());
      outcome.exit_code = 1;
      continue;
    }
    for (const auto& line : *written) {
      report += line + "\n";
      if (line.find(": not changed: ") != std::string::npos) outcome.exit_code = 1;
    }
  }
  outcome.report = report;
  return outcome;
}

std::string RoleNameFrom(std::string_view words) {
  std::string name;
  for (char c : words) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) && u < 0x80) {
      name += static_cast<char>(std::tolower(u));
    } else if (c == '_' && !name.empty() && name.back() != '-' && name.back() != '_') {
      name += '_';
    } else if (!name.empty() && name.back() != '-' && name.back() != '_') {
      name += '-';
    }
  }
  if (name.size() > kMaxRoleBase) name.resize(kMaxRoleBase);
  while (!name.empty() && (name.back() == '-' || name.back() == '_')) name.pop_back();
  return name.empty() ? "job" : name;
}

std::int64_t SuggestedMaxRuntime(std::int64_t longest_run_seconds) {
  std::int64_t twice = std::max<std::int64_t>(longest_run_seconds, 0) * 2;
  return std::max<std::int64_t>(60, (twice + 59) / 60 * 60);
}

}  // namespace schedwatch
