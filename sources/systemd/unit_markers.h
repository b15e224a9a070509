// How a timer carries its role and spec version: two keys in the [Unit] section of its unit file
// (or of a drop-in), which systemd keeps in the file and otherwise ignores (X- keys):
//
//   [Unit]
//   Description=Nightly database backup
//   X-Schedwatch-Role=db-backup
//   X-Schedwatch-Spec-Version=7
//
// Read as systemd reads unit files: the main file, then its drop-ins in order, a later
// assignment replacing an earlier one and an empty one clearing it; `#` and `;` start comments;
// a line ending in `\` continues on the next.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace schedwatch::systemd {

inline constexpr std::string_view kRoleKey = "X-Schedwatch-Role";
inline constexpr std::string_view kSpecVersionKey = "X-Schedwatch-Spec-Version";

struct UnitMarkers {
  std::string role;          // empty: no marker
  std::string spec_version;  // empty: none given
  // The files' OnCalendar= lines, for a timer the manager does not load (a masked one) and so
  // reports no TimersCalendar for.
  std::vector<std::string> on_calendar;
  // Why the markers are not believed, or a file could not be read ("" when fine). A timer with
  // an error here is a problem of the read, never a live object under a guessed role.
  std::string error;
};

// Applies one unit file's text (`name` for messages) to `markers`: pure.
void ApplyUnitFile(std::string_view text, std::string_view name, UnitMarkers& markers);

// The role names a marker may carry: what run records and the spec accept.
bool IsRoleName(std::string_view role);

// Reads the markers of a unit from its files (`paths`, main file first, each prefixed with
// `root`), as a root-owned reader of files others may write: regular files only, at most
// kMaxUnitFileBytes each, never through a link someone other than root planted. A file that is
// /dev/null (a masked unit's link) is no file. The first file that cannot be read sets `error`.
inline constexpr std::size_t kMaxUnitFileBytes = 1u << 20;
UnitMarkers ReadUnitMarkers(const std::string& root, const std::vector<std::string>& paths,
                            const std::atomic<bool>* cancelled = nullptr);

}  // namespace schedwatch::systemd
