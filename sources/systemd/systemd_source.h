// The `systemd` source: a systemd manager's timers (over D-Bus, manager_bus.h) as the live list,
// their services' state and the journal as the run history.
//
//   sources:
//     host:
//       type: systemd
//       # bus_address: unix:path=/proc/4242/root/run/dbus/system_bus_socket   # default: the
//       #                                            # host's system bus
//       # journal_directory: /var/lib/machines/web/var/log/journal            # default: the
//       #                                            # host's journal
//       # root: /proc/4242/root                      # prefix of the unit files' paths
//       timeout: 10s
//
// A bus that cannot be reached, a refused call or a timeout fails the whole list (roles become
// unknown, never missing).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sources/source.h"
#include "sources/systemd/systemd_descriptor.h"
#include "sources/systemd/unit_journal.h"
#include "sources/systemd/unit_markers.h"
#include "sources/systemd/unit_properties.h"

namespace schedwatch::systemd {

struct SystemdSourceOptions {
  std::string bus_address;
  std::string journal_directory;
  std::string root;
  std::chrono::milliseconds timeout{10000};
  bool journal = true;  // read run history from the journal too
};

class SystemdSource : public Source {
 public:
  explicit SystemdSource(SystemdSourceOptions options) : options_(std::move(options)) {}
  Result<SourceSnapshot> List(const ListContext& context) override;
  void InheritCaches(Source& previous) override;

 private:
  SystemdSourceOptions options_;
  JournalReader journal_;
};

Result<std::unique_ptr<Source>> MakeSystemdSource(const SourceOptions& options);
// The options of a systemd source block.
Result<SystemdSourceOptions> SourceOptionsOf(const SourceSpec& spec);

// One read of the manager the options name (its bus, their timeout).
Result<ManagerReading> ReadManagerOf(const SystemdSourceOptions& options,
                                     const ListContext& context);
// µs to add to this host's CLOCK_MONOTONIC to get wall time (MapTimers' monotonic_to_wall).
std::int64_t MonotonicToWallMicros();
// The markers of every timer of `reading`, from its unit files under `root` (a masked timer's:
// its own file further down the manager's UnitPath, then its drop-ins).
std::map<std::string, UnitMarkers> ReadTimerMarkers(const ManagerReading& reading,
                                                    const std::string& root,
                                                    const std::atomic<bool>* cancelled);

}  // namespace schedwatch::systemd
