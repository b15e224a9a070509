#include "sources/celery_beat/celery_beat_source.h"
#include "sources/module.h"

namespace schedwatch::celery_beat {

SourceModule Module() {
  return {MakeCeleryBeatSource, nullptr,
          "schedwatch reads django-celery-beat's tables read-only and does not write them",
          MakeCeleryBeatDiscoverer};
}

}  // namespace schedwatch::celery_beat
