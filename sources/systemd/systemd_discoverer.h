// `discover` for systemd: every timer the manager knows, marked or not. A timer's OnCalendar
// lines are its schedule ("monotonic" for one with monotonic triggers only, with how often it
// repeats); disabled, masked and stopped timers are comments; its service's longest run in the
// journal gives max_runtime; the X-Schedwatch- lines to add are printed, never written.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sources/discoverer.h"
#include "sources/systemd/unit_journal.h"
#include "sources/systemd/unit_markers.h"
#include "sources/systemd/unit_properties.h"

namespace schedwatch::systemd {

// What one read of a manager gives discover: the seam between the bus, unit files and journal
// and the rest (tests build it from fixtures captured from a real systemd).
struct TimersRead {
  ManagerReading manager;
  std::map<std::string, UnitMarkers> markers;  // by timer name
  JournalRuns journal;                         // the runs of the timers' services
  std::int64_t monotonic_to_wall = 0;          // µs, as MapTimers takes it
  std::string timezone;                        // the manager's local zone; empty: UTC
  std::vector<std::string> notes;              // what limited the read ("no run history: ...")
};
using TimersReader = std::function<Result<TimersRead>(const ListContext&)>;

// The timers of a read as discover lists them, by name: pure.
Discovery FindTimers(const TimersRead& read);

class SystemdDiscoverer : public Discoverer {
 public:
  // `unit_directory`: where an administrator's unit files and drop-ins go.
  SystemdDiscoverer(TimersReader read, std::string unit_directory);
  Result<Discovery> Discover(const ListContext& context) override;
  // The two X-Schedwatch- lines, for the timer's own file when it is the administrator's, else
  // for a drop-in beside it (a package's file is replaced on its next upgrade).
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;

 private:
  TimersReader read_;
  std::string unit_directory_;
  std::map<std::string, std::string> fragments_;  // timer -> its unit file, as last read
};

Result<std::unique_ptr<Discoverer>> MakeSystemdDiscoverer(const SourceOptions& options);

}  // namespace schedwatch::systemd
