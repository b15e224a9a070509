#include "sources/systemd/systemd_source.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <set>

#include "sources/problems.h"
#include "sources/systemd/manager_bus.h"
#include "sources/systemd/timer_mapping.h"
#include "sources/systemd/unit_markers.h"

namespace schedwatch::systemd {
namespace {

std::string LoadState(const UnitReading& timer) {
  auto it = timer.unit.find("LoadState");
  return it == timer.unit.end() ? "" : it->second.text;
}

// A unit the manager did not load (masked: its FragmentPath is the link to /dev/null) keeps its
// own file further down the search path: the first that is not a link to /dev/null.
std::vector<std::string> MaskedUnitFiles(const std::string& root, const std::string& name,
                                         const std::vector<std::string>& unit_path) {
  for (const auto& directory : unit_path) {
    if (directory.empty() || directory[0] != '/') continue;
    std::string path = directory + "/" + name;
    struct stat st {};
    if (lstat((root + path).c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[64];
      ssize_t n = readlink((root + path).c_str(), target, sizeof target);
      if (n == 9 && std::string_view(target, 9) == "/dev/null") continue;
    }
    return {path};
  }
  return {};
}

}  // namespace

std::int64_t MonotonicToWallMicros() {
  timespec wall{}, mono{};
  clock_gettime(CLOCK_REALTIME, &wall);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  return (static_cast<std::int64_t>(wall.tv_sec) - mono.tv_sec) * 1000000 +
         (wall.tv_nsec - mono.tv_nsec) / 1000;
}

std::map<std::string, UnitMarkers> ReadTimerMarkers(const ManagerReading& reading,
                                                    const std::string& root,
                                                    const std::atomic<bool>* cancelled) {
  std::map<std::string, UnitMarkers> markers;
  for (const auto& timer : reading.timers) {
    std::vector<std::string> files = UnitFiles(timer);
    std::string load = LoadState(timer);
    if (load == "masked" || (files.empty() && load != "not-found")) {
      // The mask hides the unit's own file, not its drop-ins: a vendor timer's marker sits in
      // the administrator's /etc/systemd/system/NAME.timer.d/ (as discover tells them).
      std::vector<std::string> own = MaskedUnitFiles(root, timer.name, reading.unit_path);
      auto dropins = DropInPaths(timer);
      own.insert(own.end(), dropins.begin(), dropins.end());
      files = std::move(own);
    }
    markers[timer.name] = ReadUnitMarkers(root, files, cancelled);
  }
  return markers;
}

Result<ManagerReading> ReadManagerOf(const SystemdSourceOptions& options,
                                     const ListContext& context) {
  BusOptions bus;
  bus.address = options.bus_address;
  bus.timeout = options.timeout;
  bus.cancelled = context.cancelled;
  return ReadManager(bus);
}

Result<SourceSnapshot> SystemdSource::List(const ListContext& context) {
  auto started = std::chrono::steady_clock::now();
  auto reading = ReadManagerOf(options_, context);
  if (!reading) return Error{reading.error()};
  auto markers = ReadTimerMarkers(*reading, options_.root, context.cancelled);

  ProblemSink problems;
  TimerMapping mapped = MapTimers(*reading, markers, MonotonicToWallMicros(), problems);
  SourceSnapshot snapshot;
  snapshot.objects = std::move(mapped.objects);
  snapshot.history = std::move(mapped.history);

  if (options_.journal) {
    JournalOptions journal;
    journal.directory = options_.journal_directory;
    for (const auto& [role, services] : mapped.services) {
      journal.units.insert(services.begin(), services.end());
    }
    journal.cancelled = context.cancelled;
    journal.deadline = started + options_.timeout;
    auto read = journal_.Read(journal, problems);
    if (!read) {
      // The timers still say what exists. The properties show each service's newest run only:
      // no history (a failed newest run hides the last success).
      snapshot.history.clear();
      snapshot.history_error = read.error();
      mapped.services.clear();
    }
    for (const auto& [role, services] : mapped.services) {
      RunHistory& history = snapshot.history[role];
      for (const auto& service : services) {
        // The newest run is the properties' (added by MapTimers); the journal gives the rest.
        std::string newest;
        auto found = reading->services.find(service);
        if (found != reading->services.end()) {
          ProblemSink ignored;  // counted once, by MapTimers
          if (auto run = NewestServiceRun(found->second, ignored)) newest = run->invocation_id;
        }
        history.Merge(journal_.runs().HistoryOf(service, newest));
      }
    }
  }
  problems.AppendTo(snapshot.problems);
  return snapshot;
}

void SystemdSource::InheritCaches(Source& previous) {
  auto* other = dynamic_cast<SystemdSource*>(&previous);
  if (other == nullptr) return;
  if (other->options_.journal_directory != options_.journal_directory) return;
  journal_.Swap(other->journal_);
}

Result<SystemdSourceOptions> SourceOptionsOf(const SourceSpec& spec) {
  const auto* settings = spec.SettingsAs<SystemdSettings>();
  if (settings == nullptr) return Error{"the settings are not a systemd source's"};
  SystemdSourceOptions source;
  source.bus_address = settings->bus_address;
  source.journal_directory = settings->journal_directory;
  source.root = settings->root;
  if (settings->timeout) source.timeout = *settings->timeout;
  return source;
}

Result<std::unique_ptr<Source>> MakeSystemdSource(const SourceOptions& options) {
  auto source = SourceOptionsOf(*options.spec);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Source>(std::make_unique<SystemdSource>(std::move(*source)));
}

}  // namespace schedwatch::systemd
