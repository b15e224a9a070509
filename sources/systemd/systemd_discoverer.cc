#include "sources/systemd/systemd_discoverer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "schedwatch/duration.h"
#include "schedwatch/schedule.h"
#include "sources/problems.h"
#include "sources/systemd/systemd_source.h"
#include "sources/systemd/timer_mapping.h"

namespace schedwatch::systemd {
namespace {

constexpr std::string_view kTimerSuffix = ".timer";

std::string Stem(std::string_view name) {
  if (name.size() > kTimerSuffix.size() &&
      name.compare(name.size() - kTimerSuffix.size(), kTimerSuffix.size(), kTimerSuffix) == 0) {
    name.remove_suffix(kTimerSuffix.size());
  }
  return std::string(name);
}

// Why a timer that is not enabled would not run: its state without the notes that say nothing
// about that (Persistent=true).
std::string NotRunBecause(std::string_view state) {
  std::string out;
  std::size_t start = 0;
  while (start < state.size()) {
    std::size_t end = std::min(state.find(", ", start), state.size());
    std::string_view note = state.substr(start, end - start);
    if (note != "Persistent=true") {
      if (!out.empty()) out += ", ";
      out += note;
    }
    start = end + 2;
  }
  return "timer " + (out.empty() ? std::string("not active") : out);
}

// A monotonic timer's triggers as written in a unit ("OnBootSec=15min, OnUnitActiveSec=1d"),
// and how often it repeats: its shortest OnUnitActiveSec= or OnUnitInactiveSec=. The others
// (OnBootSec=, OnStartupSec=, OnActiveSec=) fire once per boot or start.
void AddRepetition(const UnitReading& timer, FoundObject& object) {
  auto property = timer.kind.find("TimersMonotonic");
  if (property == timer.kind.end() || property->second.signature != "a(stt)") return;
  for (const auto& trigger : property->second.triples) {
    std::string base = trigger.base;  // "OnUnitActiveUSec"
    if (auto at = base.rfind("USec"); at != std::string::npos && at + 4 == base.size()) {
      base.replace(at, 4, "Sec");
    }
    std::int64_t seconds =
        std::max<std::int64_t>(1, static_cast<std::int64_t>((trigger.value + 999999) / 1000000));
    object.repeat_from += fmt::format("{}{}={}", object.repeat_from.empty() ? "" : ", ", base,
                                      FormatDuration(seconds));
    if (trigger.base == "OnUnitActiveUSec" || trigger.base == "OnUnitInactiveUSec") {
      object.repeat_seconds = std::min(object.repeat_seconds.value_or(seconds), seconds);
    }
  }
}

std::string FragmentOf(const UnitReading& timer) {
  auto fragment = timer.unit.find("FragmentPath");
  if (fragment == timer.unit.end() || fragment->second.signature != "s") return "";
  return fragment->second.text;
}

// The zone the manager reads calendar times in: its /etc/localtime's link into zoneinfo, or UTC
// (systemd's own fallback) when there is none.
std::string LocalZone(const std::string& root, std::vector<std::string>& notes) {
  std::string path = root + "/etc/localtime";
  char target[4096];
  ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0) {
    if (access(path.c_str(), F_OK) == 0) {
      notes.push_back(
          "/etc/localtime is no link into zoneinfo: the draft's zone is UTC; set `timezone` to "
          "the manager's zone");
    }
    return "";
  }
  std::string link(target, static_cast<std::size_t>(n));
  auto at = link.find("zoneinfo/");
  std::string zone = at == std::string::npos ? "" : link.substr(at + 9);
  if (zone.empty() || FindZone(zone) == nullptr) {
    notes.push_back(fmt::format(
        "/etc/localtime points at \"{}\", no zone known here: the draft's zone is UTC", link));
    return "";
  }
  return zone;
}

Result<TimersRead> ReadTimers(const SystemdSourceOptions& options, const ListContext& context) {
  auto started = std::chrono::steady_clock::now();
  auto manager = ReadManagerOf(options, context);
  if (!manager) return Error{manager.error()};
  TimersRead read;
  read.manager = std::move(*manager);
  read.markers = ReadTimerMarkers(read.manager, options.root, context.cancelled);
  read.monotonic_to_wall = MonotonicToWallMicros();
  read.timezone = LocalZone(options.root, read.notes);

  JournalOptions journal;
  journal.directory = options.journal_directory;
  for (const auto& timer : read.manager.timers) {
    auto unit = timer.kind.find("Unit");
    if (unit != timer.kind.end() && unit->second.signature == "s" && !unit->second.text.empty()) {
      journal.units.insert(unit->second.text);
    }
  }
  journal.cancelled = context.cancelled;
  journal.deadline = started + options.timeout;
  JournalReader reader;
  ProblemSink problems;
  auto done = reader.Read(journal, problems);
  if (!done) {
    read.notes.push_back("no run history from the journal: " + done.error());
  } else {
    read.journal = reader.runs();
  }
  std::vector<SourceProblem> listed;
  problems.AppendTo(listed);
  for (const auto& problem : listed) {
    read.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
  }
  return read;
}

}  // namespace

Discovery FindTimers(const TimersRead& read) {
  Discovery discovery;
  discovery.notes = read.notes;
  ProblemSink problems;
  TimerMapping mapped = MapTimers(read.manager, read.markers, read.monotonic_to_wall, problems,
                                  /*every_timer=*/true);
  std::map<std::string, const UnitReading*> timers;
  for (const auto& timer : read.manager.timers) timers[timer.name] = &timer;
  for (const LiveObject& live : SortedById(mapped.objects)) {
    std::string id(live.id());
    FoundObject object = FoundFromLive(live);
    object.marked = !live.role().empty() && !live.spec_version().empty();
    object.suggested_role = Stem(id);
    object.timezone = read.timezone;
    if (!live.enabled) object.not_run_because = NotRunBecause(live.state());
    if (live.schedule() == kMonotonicSchedule) AddRepetition(*timers.at(id), object);
    RunHistory history = mapped.history[id];
    for (const auto& service : mapped.services[id]) {
      // The newest run is the service's properties' (in `history`); the journal has the rest.
      std::string newest;
      if (auto found = read.manager.services.find(service); found != read.manager.services.end()) {
        ProblemSink ignored;  // counted by MapTimers
        if (auto run = NewestServiceRun(found->second, ignored)) newest = run->invocation_id;
      }
      history.Merge(read.journal.HistoryOf(service, newest));
    }
    AddLongestRun(history, /*successes_only=*/true, object);
    discovery.objects.push_back(std::move(object));
  }
  std::vector<SourceProblem> listed;
  problems.AppendTo(listed);
  for (const auto& problem : listed) {
    discovery.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
  }
  return discovery;
}

SystemdDiscoverer::SystemdDiscoverer(TimersReader read, std::string unit_directory)
    : read_(std::move(read)), unit_directory_(std::move(unit_directory)) {}

Result<Discovery> SystemdDiscoverer::Discover(const ListContext& context) {
  auto read = read_(context);
  if (!read) return Error{read.error()};
  fragments_.clear();
  for (const auto& timer : read->manager.timers) fragments_[timer.name] = FragmentOf(timer);
  return FindTimers(*read);
}

std::string SystemdDiscoverer::MarkerInstructions(const FoundObject& object,
                                                  const std::string& role,
                                                  const std::string& spec_version) const {
  std::string lines =
      fmt::format("  {}={}\n  {}={}\n", kRoleKey, role, kSpecVersionKey, spec_version);
  auto fragment = fragments_.find(object.id);
  std::string file = fragment == fragments_.end() ? "" : fragment->second;
  if (!file.empty() && file.rfind(unit_directory_ + "/", 0) == 0) {
    return fmt::format("{}: add to the [Unit] section of {}, then `systemctl daemon-reload`:\n{}",
                       object.id, file, lines);
  }
  return fmt::format(
      "{}: create the drop-in {}/{}.d/schedwatch.conf ({} is not the administrator's to edit), "
      "then `systemctl daemon-reload`:\n  [Unit]\n{}",
      object.id, unit_directory_, object.id, file.empty() ? "its unit file" : file, lines);
}

Result<std::unique_ptr<Discoverer>> MakeSystemdDiscoverer(const SourceOptions& options) {
  auto source = SourceOptionsOf(*options.spec);
  if (!source) return Error{source.error()};
  const auto* settings = options.spec->SettingsAs<SystemdSettings>();
  TimersReader read = [source = *source](const ListContext& context) {
    return ReadTimers(source, context);
  };
  return std::unique_ptr<Discoverer>(
      std::make_unique<SystemdDiscoverer>(std::move(read), settings->unit_directory));
}

}  // namespace schedwatch::systemd
