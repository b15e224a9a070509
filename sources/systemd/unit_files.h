// The unit files reconcile creates (systemd_repairer.h), written so that a kill at any point
// leaves nothing half done under a unit's name:
// - a file is only ever reachable by its final name, complete: its content goes to an unnamed
//   file (O_TMPFILE) in the unit directory that linkat names only if the name is free. Where the
//   file system has no O_TMPFILE (overlayfs before Linux 6.6, NFS), a temporary
//   ".schedwatch-PID.NAME.tmp" is linked and removed; one a killed run left is removed later.
// - a creation is announced by an intent file ".schedwatch.NAME.timer.creating" beside the units
//   before anything is written and removed once the timer is started, so that the next run
//   recognises its own unfinished work (files written, timer not enabled or started) and
//   finishes it, and never takes a person's disabled timer for it.
// systemd ignores both: their names start with a dot and are no unit names.
#pragma once

#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch::systemd {

enum class Placed { kCreated, kTaken };

// Creates `directory`/`name` with `content`, mode 0644; kTaken when the name is there (a file,
// a link, a mask), which is never replaced nor followed. `named_temporary`: the fallback, for
// tests.
Result<Placed> CreateUnitFile(const std::string& directory, const std::string& name,
                              std::string_view content, bool named_temporary = false);

// Removes the temporaries of CreateUnitFile in `directory` whose process is gone; how many.
int RemoveStaleTemporaries(const std::string& directory);

// Whether the manager takes `directory`/`name` for a mask: a link to /dev/null, the device
// itself, or an empty file (systemd's null_or_empty).
bool IsMask(const std::string& directory, const std::string& name);

// The intent file of a creation of `timer` in `directory`.
std::string IntentPath(const std::string& directory, const std::string& timer);

}  // namespace schedwatch::systemd
