#include "exporter/pages/explain.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/duration.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

std::string Ago(std::int64_t time, std::int64_t now) {
  return time <= now ? FormatDuration(now - time) + " ago" : "in " + FormatDuration(time - now);
}

std::string Ids(const RoleObjects& objects, bool (*pick)(const LiveObject&)) {
  std::string out;
  for (const auto& object : objects) {
    if (!pick(object)) continue;
    if (!out.empty()) out += ", ";
    out += object.id();
  }
  return out;
}

std::string Plural(std::size_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string OriginText(ValueOrigin origin) { return std::string(ValueOriginText(origin)); }

}  // namespace

std::string RunbookLink(const std::string& base, const std::string& alert) {
  std::string anchor = alert;
  std::transform(anchor.begin(), anchor.end(), anchor.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return base + "#" + anchor;
}

std::vector<std::string> DriftFields(const JobSpec& job, const LiveObject& object) {
  std::vector<std::string> fields;
  if (!Drifted(job, object)) return fields;
  if (!job.schedule.SameAs(object.schedule())) fields.push_back("schedule");
  if (!object.timezone().empty() && object.timezone() != job.timezone &&
      FindZone(object.timezone()) != FindZone(job.timezone)) {
    fields.push_back("timezone");
  }
  if (object.spec_version() != job.spec_version) fields.push_back("spec_version");
  return fields;
}

std::optional<FailingJudgement> FailingJudgementOf(const RoleResult& role) {
  const JobAlerting& alerting = role.job->Alerting();
  if (!alerting.Thresholds() || role.status.Has(Condition::kUnknown)) return std::nullopt;
  std::vector<Run::Outcome> outcomes;
  if (role.runs) {
    for (const RecordedRun& run : *role.runs) {
      // As Classify: a run started in a maintenance window is excused.
      if (!OpenWindow(alerting.maintenance, run.started)) outcomes.push_back(run.outcome);
    }
  }
  return JudgeFailing(alerting, outcomes);
}

std::string FailingHistoryText(const RoleResult& role) {
  auto judgement = FailingJudgementOf(role);
  if (!judgement) return "";
  const JobAlerting& alerting = role.job->Alerting();
  std::string counted =
      fmt::format("failure_threshold {}, recovery_threshold {}, judged from {}",
                  alerting.failure_threshold, alerting.recovery_threshold,
                  Plural(judgement->finished_runs, "finished run", "finished runs"));
  if (!judgement->short_history) return counted;
  return counted +
         ": fewer than failure_threshold, so from those there are (failing when they all "
         "failed); the source may keep fewer runs";
}

std::vector<ConditionReason> ExplainConditions(const RoleResult& role, const SourceStatus* source,
                                               std::int64_t now) {
  const JobSpec& job = *role.job;
  const RoleStatus& status = role.status;
  const RunSummary& history = status.history;
  const RoleObjects& objects = role.objects;
  std::vector<ConditionReason> reasons;
  auto add = [&](Condition condition, std::string text, const char* action, const char* alert) {
    reasons.push_back({condition, std::move(text), action, alert});
  };
  if (status.Has(Condition::kUnknown) && status.registered_objects) {
    add(Condition::kUnknown,
        fmt::format("the run history of source {} could not be read{}; existence is judged from "
                    "its list, runs are not",
                    job.source,
                    source != nullptr && !source->history_error.empty()
                        ? ": " + source->history_error
                        : ""),
        "check the source's log, journal or runs API", "SchedwatchSourceHistoryDown");
  } else if (status.Has(Condition::kUnknown)) {
    add(Condition::kUnknown,
        source != nullptr && !source->error.empty()
            ? fmt::format("source {} could not be listed: {}; nothing else is claimed", job.source,
                          source->error)
            : fmt::format("source {} could not be listed; nothing else is claimed", job.source),
        "check the source, credentials, network", "SchedwatchSourceDown");
  }
  if (status.Has(Condition::kMissing)) {
    add(Condition::kMissing,
        fmt::format("no live object in source {} in two reads of the same refresh", job.source),
        "re-read, then re-create from the template", "SchedwatchJobMissing");
  }
  if (status.Has(Condition::kInactive)) {
    std::string ids;  // with the scheduler's word for why not: "e2scrub_all.timer (masked)"
    for (const auto& object : objects) {
      ids += fmt::format("{}{}", ids.empty() ? "" : ", ", object.id());
      if (!object.state().empty()) ids += fmt::format(" ({})", object.state());
    }
    add(Condition::kInactive,
        fmt::format("{}, none enabled: {}", Plural(objects.size(), "live object", "live objects"),
                    ids),
        "check the change history, enable explicitly", "SchedwatchJobInactive");
  }
  if (status.Has(Condition::kDuplicate)) {
    add(Condition::kDuplicate,
        fmt::format("{} live objects hold the role: {}", objects.size(),
                    Ids(objects, [](const LiveObject&) { return true; })),
        "confirm ownership by hand; never auto-delete", "SchedwatchJobDuplicate");
  }
  if (status.Has(Condition::kDrift)) {
    std::string text;
    for (const auto& object : objects) {
      for (const auto& field : DriftFields(job, object)) {
        std::string_view live = field == "schedule"   ? object.schedule()
                                : field == "timezone" ? object.timezone()
                                                      : object.spec_version();
        std::string desired = field == "schedule"   ? job.schedule.text()
                              : field == "timezone" ? job.timezone.str()
                                                    : job.spec_version;
        text += fmt::format("{}{} has {} \"{}\", the spec \"{}\"", text.empty() ? "" : "; ",
                            object.id(), field, live, desired);
      }
    }
    add(Condition::kDrift, text.empty() ? "a live object differs from the spec" : text,
        "find who changed it and which version is right", "SchedwatchJobDrift");
  }
  if (status.Has(Condition::kNotStarted) && job.schedule.is_monotonic()) {
    // Classify looked at the scheduler's own next start (next_scheduled for such a job), having
    // no fire times of its own.
    const OptionalTime due = status.next_scheduled;
    add(Condition::kNotStarted,
        fmt::format("the timer's own next start {} passed, plus start_grace {} and its delay, "
                    "with no start since; {}",
                    due ? FormatRfc3339(*due, job.schedule.zone()) : "(unknown)",
                    FormatDuration(job.start_grace),
                    history.last_started ? "last start " + Ago(*history.last_started, now)
                                         : "no start seen"),
        "run history, scheduler health", "SchedwatchJobNotStarted");
  } else if (status.Has(Condition::kNotStarted)) {
    // The fire times Classify looked at: the last `missed_starts`, each with its grace passed.
    std::vector<std::int64_t> fires;
    std::optional<std::int64_t> fire = job.schedule.Previous(now - job.start_grace);
    while (fire && static_cast<int>(fires.size()) < job.missed_starts) {
      fires.insert(fires.begin(), *fire);
      fire = job.schedule.Previous(*fire - 1);
    }
    std::string times;
    for (std::int64_t f : fires) {
      times += (times.empty() ? "" : ", ") + FormatRfc3339(f, job.schedule.zone());
    }
    add(Condition::kNotStarted,
        fmt::format("{} passed, each plus start_grace {}, with no start since {}; {}",
                    fires.size() == 1 ? "fire time " + times
                                      : fmt::format("{} fire times ({})", fires.size(), times),
                    FormatDuration(job.start_grace), fires.empty() ? "" : "the first",
                    history.last_started ? "last start " + Ago(*history.last_started, now)
                                         : "no start seen since the role became desired " +
                                               Ago(status.desired_since, now)),
        "run history, scheduler health", "SchedwatchJobNotStarted");
  }
  if (status.Has(Condition::kHung) && history.running_since) {
    add(Condition::kHung,
        fmt::format("a run started {} ({}) and has not finished: {} running, more than "
                    "max_runtime {}",
                    Ago(*history.running_since, now),
                    FormatRfc3339(*history.running_since, job.schedule.zone()),
                    FormatDuration(now - *history.running_since), FormatDuration(job.max_runtime)),
        "logs, timeouts", "SchedwatchJobHung");
  }
  std::string counted = FailingHistoryText(role);
  if (status.Has(Condition::kFailing) && !counted.empty()) {
    const JobAlerting& alerting = job.Alerting();
    add(Condition::kFailing,
        fmt::format("{} failed runs in a row make it failing, {} successful ones end it; last "
                    "failure {}, last success {} ({})",
                    alerting.failure_threshold, alerting.recovery_threshold,
                    history.last_failure ? Ago(*history.last_failure, now) : "not seen",
                    history.last_success ? Ago(*history.last_success, now) : "never seen", counted),
        "job logs", "SchedwatchJobFailing");
  } else if (status.Has(Condition::kFailing) && history.last_failure) {
    add(Condition::kFailing,
        fmt::format("the latest finished run failed {}; last success {}",
                    Ago(*history.last_failure, now),
                    history.last_success ? Ago(*history.last_success, now) : "never seen"),
        "job logs", "SchedwatchJobFailing");
  }
  if (status.Has(Condition::kTooShort)) {
    const RecordedRun* latest = nullptr;
    if (role.runs) {
      for (auto run = role.runs->rbegin(); run != role.runs->rend() && !latest; ++run) {
        if (run->outcome != Run::Outcome::kRunning) latest = &*run;
      }
    }
    add(Condition::kTooShort,
        latest && latest->duration >= 0
            ? fmt::format("the latest finished run (started {}) succeeded in {}, less than "
                          "min_runtime {}",
                          Ago(latest->started, now), FormatDuration(latest->duration),
                          FormatDuration(job.Alerting().min_runtime))
            : fmt::format("the latest finished run succeeded in less than min_runtime {}",
                          FormatDuration(job.Alerting().min_runtime)),
        "that run's logs and inputs", "SchedwatchJobTooShort");
  }
  if (status.Has(Condition::kStale) && job.stale_after) {
    add(Condition::kStale,
        history.last_success
            ? fmt::format("last success {}, more than stale_after {}",
                          Ago(*history.last_success, now), FormatDuration(*job.stale_after))
            : fmt::format("no success seen since the role became desired {}, more than "
                          "stale_after {}",
                          Ago(status.desired_since, now), FormatDuration(*job.stale_after)),
        "run history and job logs", "SchedwatchJobSuccessStale");
  }
  if (status.Has(Condition::kStalled) && job.progress()) {
    add(Condition::kStalled,
        status.last_progress
            ? fmt::format("success is fresh, but the progress checkpoint is from {}, more than "
                          "its stale_after {}",
                          Ago(*status.last_progress, now),
                          FormatDuration(job.progress()->stale_after))
            : fmt::format("success is fresh, but no progress checkpoint was seen since the role "
                          "became desired {}, more than its stale_after {}",
                          Ago(status.desired_since, now),
                          FormatDuration(job.progress()->stale_after)),
        "inputs and domain conditions", "SchedwatchJobProgressStalled");
  }
  if (status.held.any() && status.clock_step()) {
    const ClockStep& step = *status.clock_step();
    static constexpr struct {
      Condition condition;
      const char* alert;
    } kHeld[] = {{Condition::kNotStarted, "SchedwatchJobNotStarted"},
                 {Condition::kHung, "SchedwatchJobHung"},
                 {Condition::kStale, "SchedwatchJobSuccessStale"},
                 {Condition::kStalled, "SchedwatchJobProgressStalled"}};
    for (const auto& held : kHeld) {
      if (!status.held.test(static_cast<int>(held.condition))) continue;
      reasons.push_back(
          {held.condition,
           fmt::format("held, not raised: the watcher's clock moved {}{} (seen {}); by the clock "
                       "without that step the role is not {}, so the step alone would raise it",
                       step.seconds < 0 ? "back " : "forward ",
                       FormatDuration(step.seconds < 0 ? -step.seconds : step.seconds),
                       Ago(step.at, now), ConditionName(held.condition)),
           "check the host's time sync (timedatectl, chronyc tracking)", held.alert, true});
    }
  }
  return reasons;
}

std::vector<Threshold> Thresholds(const JobSpec& job) {
  std::vector<Threshold> out;
  auto duration = [&](const char* name, std::int64_t seconds, ValueOrigin origin) {
    out.push_back({name, FormatDuration(seconds), OriginText(origin), seconds});
  };
  out.push_back({"period",
                 job.period                    ? FormatDuration(*job.period)
                 : job.schedule.is_monotonic() ? "none (a monotonic timer: no fire times)"
                                               : "none (runs at boot)",
                 "computed from the schedule: the longest gap between fire times", job.period});
  duration("start_grace", job.start_grace, job.origins.start_grace);
  out.push_back({"missed_starts", std::to_string(job.missed_starts),
                 OriginText(job.origins.missed_starts), std::nullopt});
  duration("max_runtime", job.max_runtime, job.origins.max_runtime);
  if (job.stale_after) {
    std::string origin =
        OriginText(job.stale_after_overridden ? ValueOrigin::kJob : job.origins.stale_after);
    if (!job.stale_after_overridden && job.period) {
      origin += fmt::format(" (2 × {} + {})", FormatDuration(*job.period),
                            FormatDuration(job.max_runtime));
    }
    out.push_back({"stale_after", FormatDuration(*job.stale_after), origin, job.stale_after});
  } else {
    out.push_back({"stale_after", "none", "no period to derive it from", std::nullopt});
  }
  if (job.progress()) {
    duration("progress.stale_after", job.progress()->stale_after, ValueOrigin::kJob);
  }
  duration("alert_for", job.alert_for, job.origins.alert_for);
  // Rarely set: listed only when they are (their origin is not recorded).
  const JobAlerting& alerting = job.Alerting();
  if (alerting.Thresholds()) {
    for (auto [name, value] : {std::pair{"failure_threshold", alerting.failure_threshold},
                               std::pair{"recovery_threshold", alerting.recovery_threshold}}) {
      out.push_back({name, std::to_string(value), "the spec (job or defaults)", std::nullopt});
    }
  }
  if (alerting.min_runtime > 0) {
    out.push_back({"min_runtime", FormatDuration(alerting.min_runtime),
                   "the spec (job or defaults)", alerting.min_runtime});
  }
  for (const auto& window : alerting.maintenance) {
    out.push_back({"maintenance", window.text, "the spec (job or defaults)", std::nullopt});
  }
  if (alerting.duration_histogram) {
    out.push_back({"duration_histogram", "true", "the spec (job or defaults)", std::nullopt});
  }
  return out;
}

std::string RunOriginText(const SourceSpec* source, RunOrigin origin) {
  if (origin == RunOrigin::kRunner) return "the job's run record";
  if (source == nullptr) return "its source";
  const SourceDescriptor* descriptor = BuiltInCatalog().Find(source->type);
  if (descriptor == nullptr || source->settings == nullptr) return "source " + source->name;
  return descriptor->RunHistoryOrigin(*source->settings);
}

int SeverityRank(const RoleStatus& status) {
  for (int c = 0; c < kConditionCount; ++c) {
    if (status.conditions.test(c)) return c;
  }
  return kConditionCount;
}

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if (byte < 0x20 || byte == 0x7f) {
        out += fmt::format("\\x{:02x}", byte);
      } else {
        out += static_cast<char>(byte);
      }
      ++i;
      continue;
    }
    // One UTF-8 sequence, checked: shortest form, no surrogates, at most U+10FFFF.
    std::size_t length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 0;
    char32_t code = length == 4 ? byte & 0x07 : length == 3 ? byte & 0x0f : byte & 0x1f;
    bool valid = length > 0 && byte <= 0xf4 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xc0) == 0x80;
      code = (code << 6) | (next & 0x3f);
    }
    static constexpr char32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    valid = valid && code >= kSmallest[length] && code <= 0x10ffff &&
            !(code >= 0xd800 && code <= 0xdfff);
    if (!valid) {
      out += fmt::format("\\x{:02x}", byte);
      ++i;
      continue;
    }
    bool control = (code >= 0x80 && code <= 0x9f) || code == 0x061c || code == 0x200e ||
                   code == 0x200f || (code >= 0x2028 && code <= 0x202e) ||
                   (code >= 0x2066 && code <= 0x2069);
    if (control) {
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(code));
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace schedwatch
