// Reads a systemd manager over D-Bus with libsystemd's sd-bus: every timer unit it knows (loaded,
// or only a unit file: ListUnitsByPatterns and ListUnitFilesByPatterns), their properties, and
// the properties of the services they activate. Nothing is interpreted here: the values go to
// the pure mapping (timer_mapping.h) as read.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "schedwatch/result.h"
#include "sources/systemd/unit_properties.h"

namespace schedwatch::systemd {

struct BusOptions {
  std::string address;  // empty: the system bus ($DBUS_SYSTEM_BUS_ADDRESS or the default)
  std::chrono::milliseconds timeout{10000};  // the whole read
  std::size_t max_timers = 10000;            // more is a failed read: not a real host
  const std::atomic<bool>* cancelled = nullptr;
};

// One complete read, or an Error (no bus, a timeout, a refused call): then the source's roles
// are unknown, never missing.
Result<ManagerReading> ReadManager(const BusOptions& options);

// A connection that other callers (reconcile) use for method calls, closed on destruction.
class ManagerConnection {
 public:
  static Result<ManagerConnection> Open(const std::string& address,
                                        std::chrono::milliseconds call_timeout);
  ManagerConnection(ManagerConnection&& other) noexcept;
  ManagerConnection& operator=(ManagerConnection&&) = delete;
  ManagerConnection(const ManagerConnection&) = delete;
  ~ManagerConnection();

  // org.freedesktop.systemd1.Manager methods reconcile needs.
  Result<bool> Reload();                                  // daemon-reload, waits for it to finish
  Result<bool> EnableUnitFiles(const std::string& unit);  // [Install] links, as enable does
  Result<bool> StartUnit(const std::string& unit);        // mode "replace"

 private:
  explicit ManagerConnection(void* bus) : bus_(bus) {}
  void* bus_;  // sd_bus*, kept out of the header
};

}  // namespace schedwatch::systemd
