#include "sources/module.h"
#include "sources/sidekiq_cron/sidekiq_cron_discoverer.h"
#include "sources/sidekiq_cron/sidekiq_cron_repairer.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

namespace schedwatch::sidekiq_cron {

SourceModule Module() {
  return {MakeSidekiqCronSource, MakeSidekiqCronRepairer, "",
          [](const SourceOptions& options) { return MakeSidekiqCronDiscoverer(options); }};
}

}  // namespace schedwatch::sidekiq_cron
