#include "sources/systemd/timer_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace schedwatch::systemd {
namespace {

constexpr std::uint64_t kInfinity = std::numeric_limits<std::uint64_t>::max();
// Times past 9999-12-31 are not times: a hostile or broken peer's values.
constexpr std::uint64_t kMaxMicros = 253402300799ull * 1000000ull;

// Typed access to a bag, reporting a property of the wrong type as a problem once.
class Props {
 public:
  Props(const UnitReading& unit, const PropertyBag& bag, ProblemSink& problems)
      : unit_(unit), bag_(bag), problems_(problems) {}

  const PropertyValue* Get(const char* name, std::string_view signature) const {
    auto it = bag_.find(name);
    if (it == bag_.end()) return nullptr;
    if (it->second.signature != signature) {
      problems_.Add(Reason::kMalformedObject, [&] {
        return fmt::format("unit {}: property {} has type \"{}\", expected \"{}\"", unit_.name,
                           name, it->second.signature, signature);
      });
      return nullptr;
    }
    return &it->second;
  }
  std::string Text(const char* name) const {
    const auto* v = Get(name, "s");
    return v ? v->text : "";
  }
  std::uint64_t Micros(const char* name) const {
    const auto* v = Get(name, "t");
    return v ? v->unsigned_number : 0;
  }
  // A timestamp in Unix seconds; nullopt for 0 (never) and infinity, a problem past year 9999.
  std::optional<std::int64_t> Time(const char* name) const {
    std::uint64_t us = Micros(name);
    if (us == 0 || us == kInfinity) return std::nullopt;
    if (us > kMaxMicros) {
      problems_.Add(Reason::kMalformedObject, [&] {
        return fmt::format("unit {}: property {} is {} µs, past the year 9999", unit_.name, name,
                           us);
      });
      return std::nullopt;
    }
    return static_cast<std::int64_t>(us / 1000000u);
  }

 private:
  const UnitReading& unit_;
  const PropertyBag& bag_;
  ProblemSink& problems_;
};

bool IsRunningState(std::string_view state) {
  return state == "active" || state == "activating" || state == "deactivating" ||
         state == "reloading";
}

bool Known(std::string_view value, std::initializer_list<std::string_view> values) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

std::int64_t CeilSeconds(std::uint64_t micros) {
  if (micros > kMaxMicros) return 0;
  return static_cast<std::int64_t>((micros + 999999u) / 1000000u);
}

}  // namespace

std::vector<std::string> DropInPaths(const UnitReading& timer) {
  auto dropins = timer.unit.find("DropInPaths");
  if (dropins == timer.unit.end() || dropins->second.signature != "as") return {};
  return dropins->second.texts;
}

std::vector<std::string> UnitFiles(const UnitReading& timer) {
  std::vector<std::string> files;
  auto fragment = timer.unit.find("FragmentPath");
  if (fragment != timer.unit.end() && fragment->second.signature == "s" &&
      !fragment->second.text.empty()) {
    files.push_back(fragment->second.text);
  }
  auto dropins = DropInPaths(timer);
  files.insert(files.end(), dropins.begin(), dropins.end());
  return files;
}

std::optional<ServiceRun> NewestServiceRun(const UnitReading& service, ProblemSink& problems) {
  Props unit(service, service.unit, problems);
  Props kind(service, service.kind, problems);
  std::string active = unit.Text("ActiveState");
  std::string result = kind.Text("Result");
  auto started = kind.Time("ExecMainStartTimestamp");
  auto exited = kind.Time("ExecMainExitTimestamp");
  ServiceRun out;
  if (const auto* id = unit.Get("InvocationID", "ay"); id != nullptr) out.invocation_id = id->text;
  if (!result.empty() &&
      !Known(result, {"success", "exit-code", "signal", "core-dump", "timeout", "watchdog",
                      "start-limit-hit", "resources", "oom-kill", "protocol", "exec-condition",
                      "condition", "skip-condition"})) {
    problems.Add(Reason::kMalformedObject, [&] {
      return fmt::format("unit {}: Result \"{}\" is not one systemd 252 reports", service.name,
                         result);
    });
  }
  if (!started) {
    // Failed before its main process ran (start-limit-hit, resources): a failure when it left
    // the active states, without a start of its own.
    if (result.empty() || result == "success") return std::nullopt;
    auto when = unit.Time("InactiveEnterTimestamp");
    if (!when) return std::nullopt;
    out.run = Run{*when, *when, Run::Outcome::kFailed};
    out.failure = result;
    return out;
  }
  bool finished = exited && *exited >= *started;
  if (!finished) {
    if (!IsRunningState(active)) {
      // Inactive with no exit time: the process was never seen to end (a manager restart).
      problems.Add(Reason::kMalformedObject, [&] {
        return fmt::format("unit {}: {} with a start and no exit time", service.name, active);
      });
      return std::nullopt;
    }
    out.run = Run{*started, std::nullopt, Run::Outcome::kRunning};
    return out;
  }
  bool success = result == "success";
  out.run = Run{*started, *exited, success ? Run::Outcome::kSucceeded : Run::Outcome::kFailed};
  if (!success) {
    out.failure = result;
    if (const auto* status = kind.Get("ExecMainStatus", "i"); status != nullptr) {
      if (result == "exit-code") out.failure += fmt::format(", status {}", status->number);
      if (result == "signal" || result == "core-dump") {
        out.failure += fmt::format(", signal {}", status->number);
      }
    }
  }
  return out;
}

TimerMapping MapTimers(const ManagerReading& reading,
                       const std::map<std::string, UnitMarkers>& markers,
                       std::int64_t monotonic_to_wall, ProblemSink& problems, bool every_timer) {
  TimerMapping out;
  for (const auto& refused : reading.refused) {
    problems.Add(Reason::kMalformedObject, [&] { return refused; });
  }
  const UnitMarkers unmarked;
  for (const auto& timer : reading.timers) {
    auto marked = markers.find(timer.name);
    if (marked == markers.end() && !every_timer) continue;
    const UnitMarkers& marker = marked == markers.end() ? unmarked : marked->second;
    if (!marker.error.empty()) {
      problems.Add(Reason::kMalformedMarker,
                   [&] { return fmt::format("timer {}: {}", timer.name, marker.error); });
      continue;
    }
    if (marker.role.empty() && !every_timer) continue;
    const std::string& key = every_timer ? timer.name : marker.role;
    Props unit(timer, timer.unit, problems);
    Props kind(timer, timer.kind, problems);
    std::string load = unit.Text("LoadState");
    std::string active = unit.Text("ActiveState");
    std::string file_state = unit.Text("UnitFileState");
    if (load == "not-found" || load.empty()) continue;  // no unit: its role is missing
    if (active.empty()) {
      problems.Add(Reason::kMalformedObject,
                   [&] { return fmt::format("timer {}: no ActiveState", timer.name); });
      continue;
    }

    std::vector<std::string> calendar;
    const auto* triggers = kind.Get("TimersCalendar", "a(sst)");
    if (triggers != nullptr) {
      for (const auto& trigger : triggers->triples) {
        if (trigger.base == "OnCalendar") calendar.push_back(trigger.text);
      }
    }
    bool loaded = load == "loaded";
    if (!loaded) calendar = marker.on_calendar;  // a masked timer reports none
    std::string schedule;
    for (const auto& line : calendar) {
      if (!schedule.empty()) schedule += '\n';
      schedule += line;
    }
    // Read, and no OnCalendar= among them: monotonic triggers only.
    if (calendar.empty() && (triggers != nullptr || !loaded)) schedule = kMonotonicSchedule;

    bool masked = load == "masked" || file_state == "masked" || file_state == "masked-runtime";
    bool disabled = file_state == "disabled";
    bool running = active == "active" || active == "activating";
    LiveObject object(timer.name, marker.role, schedule, "", marker.spec_version,
                      loaded && !masked && !disabled && running);
    std::vector<std::string> notes;
    if (masked) {
      notes.push_back("masked");
    } else if (!loaded) {
      notes.push_back("not loaded (" + load + ")");
    } else {
      if (disabled) notes.push_back("disabled");
      if (!running) notes.push_back("stopped (" + active + ")");
    }
    if (const auto* persistent = kind.Get("Persistent", "b"); persistent && persistent->flag) {
      notes.push_back("Persistent=true");
    }
    std::string state;
    for (const auto& note : notes) {
      if (!state.empty()) state += ", ";
      state += note;
    }
    object.set_state(state);

    object.start_delay =
        CeilSeconds(kind.Micros("RandomizedDelayUSec")) + CeilSeconds(kind.Micros("AccuracyUSec"));
    if (auto next = kind.Time("NextElapseUSecRealtime")) {
      object.next_start = *next;
    } else if (calendar.empty()) {
      std::uint64_t mono = kind.Micros("NextElapseUSecMonotonic");
      if (mono != 0 && mono != kInfinity && mono <= kMaxMicros) {
        object.next_start = (static_cast<std::int64_t>(mono) + monotonic_to_wall) / 1000000;
      }
    }

    RunHistory& history = out.history[key];
    std::string service = kind.Text("Unit");
    if (!service.empty()) {
      out.services[key].push_back(service);
      auto found = reading.services.find(service);
      if (found != reading.services.end()) {
        if (auto run = NewestServiceRun(found->second, problems)) history.Add(run->run);
      }
    }
    if (auto triggered = kind.Time("LastTriggerUSec")) {
      if (!history.last_started || *history.last_started < *triggered) {
        history.last_started = *triggered;
      }
    }
    out.objects.push_back(std::move(object));
  }
  return out;
}

}  // namespace schedwatch::systemd
