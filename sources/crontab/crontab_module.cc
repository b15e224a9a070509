#include "sources/crontab/crontab_discoverer.h"
#include "sources/crontab/crontab_source.h"
#include "sources/module.h"

namespace schedwatch::crontab {

SourceModule Module() {
  return {MakeCrontabSource, MakeCrontabRepairer, "", MakeCrontabDiscoverer};
}

}  // namespace schedwatch::crontab
