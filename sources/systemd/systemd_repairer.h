// reconcile for systemd: the template is a timer's unit file, `<name>.timer`, with its service
// `<name>.service` beside it; both are written to the source's unit directory (under `root`),
// never over a file that is there nor where the operator masked either unit, then the manager
// reloads, enables and starts the timer. A creation a kill interrupted is finished by the next
// run (unit_files.h).
#pragma once

#include <memory>

#include "sources/repairer.h"

namespace schedwatch {

Result<std::unique_ptr<Repairer>> MakeSystemdRepairer(const SourceSpec& source);

}  // namespace schedwatch
