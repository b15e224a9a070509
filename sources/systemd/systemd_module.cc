#include "sources/module.h"
#include "sources/systemd/systemd_discoverer.h"
#include "sources/systemd/systemd_repairer.h"
#include "sources/systemd/systemd_source.h"

namespace schedwatch::systemd {

SourceModule Module() {
  return {MakeSystemdSource, MakeSystemdRepairer, "", MakeSystemdDiscoverer};
}

}  // namespace schedwatch::systemd
