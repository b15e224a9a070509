// What a systemd manager's timers and services mean to schedwatch: a pure function from their
// properties as read (unit_properties.h) and the markers of their unit files (unit_markers.h) to
// live objects, run history and problems. Tested on properties captured from a real systemd.
//
// - A timer is a live object when its files carry X-Schedwatch-Role; its id is the unit name.
// - schedule: its OnCalendar expressions as the manager reports them (TimersCalendar), in order,
//   joined with "\n"; for a timer the manager did not load (masked), its files' OnCalendar lines;
//   "monotonic" (kMonotonicSchedule) for a timer with none.
// - enabled: loaded, active (waiting or running) and not disabled or masked; `state` says why
//   not, and notes Persistent=true.
// - start_delay: RandomizedDelayUSec + AccuracyUSec. next_start: NextElapseUSecRealtime, or for a
//   timer with only monotonic triggers NextElapseUSecMonotonic moved to wall time.
// - The run history of its role: the activated service's newest run from its properties
//   (ExecMainStartTimestamp, ExecMainExitTimestamp, Result, ActiveState), and the timer's
//   LastTriggerUSec as a start.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedwatch/classify.h"
#include "sources/problems.h"
#include "sources/systemd/unit_markers.h"
#include "sources/systemd/unit_properties.h"

namespace schedwatch::systemd {

struct TimerMapping {
  std::vector<LiveObject> objects;
  std::map<std::string, RunHistory> history;  // by role (every_timer: by timer name)
  // The service each marked timer activates, by role (a duplicate role has several): where the
  // journal's runs of the role are found. every_timer: by timer name.
  std::map<std::string, std::vector<std::string>> services;
};

// `monotonic_to_wall`: µs to add to a CLOCK_MONOTONIC time of the manager to get wall time.
// `every_timer` (discover): unmarked timers are objects too, with no role, and history and
// services are keyed by timer name.
TimerMapping MapTimers(const ManagerReading& reading,
                       const std::map<std::string, UnitMarkers>& markers,
                       std::int64_t monotonic_to_wall, ProblemSink& problems,
                       bool every_timer = false);

// The newest run of a service from its properties; nullopt when it never ran. Failures say why
// in `failure` ("exit-code, status 3", "signal 9", "timeout").
struct ServiceRun {
  Run run;
  std::string failure;
  std::string invocation_id;
};
std::optional<ServiceRun> NewestServiceRun(const UnitReading& service, ProblemSink& problems);

// The unit files to read a timer's markers from: FragmentPath then DropInPaths, as reported.
std::vector<std::string> UnitFiles(const UnitReading& timer);
// Its DropInPaths alone (a masked unit's are read after its own file further down the path).
std::vector<std::string> DropInPaths(const UnitReading& timer);

}  // namespace schedwatch::systemd
