#include "sources/module.h"
#include "sources/sidekiq_cron/sidekiq_cron_discoverer.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

namespace schedwatch::sidekiq_cron {

SourceModule Module() {
  return {MakeSidekiqCronSource, nullptr,
          "Sidekiq-cron's jobs come from the application's config/schedule.yml: restore the "
          "entry there and deploy (a job written into Redis by another hand is dropped by the "
          "next load_from_hash!)",
          [](const SourceOptions& options) { return MakeSidekiqCronDiscoverer(options); }};
}

}  // namespace schedwatch::sidekiq_cron
