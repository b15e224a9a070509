// A unit's D-Bus properties as read, before any meaning is given to them: the seam between the
// bus (manager_bus.h) and the pure mapping to live objects and runs (timer_mapping.h). Tests and
// fuzzing build these from JSON fixtures captured from a real systemd.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch::systemd {

// One property value. `signature` is its D-Bus type; only the member it names is set. Values of
// other types are kept as their signature alone, so the mapping can say they were unexpected.
struct PropertyValue {
  std::string signature;              // "s", "o", "t", "i", "u", "b", "as", "a(sst)", "a(stt)", ...
  std::string text;                   // s, o; ay as hex
  std::uint64_t unsigned_number = 0;  // t, u
  std::int64_t number = 0;            // x, i
  bool flag = false;                  // b
  std::vector<std::string> texts;     // as
  // a(sst): TimersCalendar (base, expression in `text`, next elapse); a(stt): TimersMonotonic
  // (base, µs in `value`, next elapse).
  struct Triple {
    std::string base;
    std::string text;
    std::uint64_t value = 0;
    std::uint64_t next = 0;
  };
  std::vector<Triple> triples;
};

using PropertyBag = std::map<std::string, PropertyValue>;

// One unit as read: its name and the properties of its interfaces.
struct UnitReading {
  std::string name;  // "backup.timer"
  PropertyBag unit;  // org.freedesktop.systemd1.Unit
  PropertyBag kind;  // org.freedesktop.systemd1.Timer or .Service
};

// Everything one read of a manager gave: every timer unit it knows (loaded or only as a file),
// the services they activate, and the unit files' states as ListUnitFiles gave them.
struct ManagerReading {
  std::vector<UnitReading> timers;
  std::map<std::string, UnitReading> services;  // by name
  std::vector<std::string> unit_path;           // the manager's UnitPath: where unit files live
  // Units whose properties the manager refused (an error reply, not a timeout): the rest is read.
  std::vector<std::string> refused;
};

// JSON form of a reading, for fixtures: {"timers": [{"name", "unit": {PROP: [SIG, VALUE]},
// "kind": {...}}], "services": [...], "unit_path": [...]}. Reading rejects what is not of that
// shape with an Error naming where.
nlohmann::json ToJson(const ManagerReading& reading);
Result<ManagerReading> ManagerReadingFromJson(const nlohmann::json& json);

}  // namespace schedwatch::systemd
