#include "sources/celery_beat/celery_beat_source.h"
#include "sources/module.h"

namespace schedwatch::celery_beat {

SourceModule Module() {
  return {MakeCeleryBeatSource, MakeCeleryBeatRepairer, "", MakeCeleryBeatDiscoverer};
}

}  // namespace schedwatch::celery_beat
