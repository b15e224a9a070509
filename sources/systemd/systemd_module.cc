#include "sources/module.h"
#include "sources/systemd/systemd_repairer.h"
#include "sources/systemd/systemd_source.h"

namespace schedwatch::systemd {

SourceModule Module() { return {MakeSystemdSource, MakeSystemdRepairer, ""}; }

}  // namespace schedwatch::systemd
