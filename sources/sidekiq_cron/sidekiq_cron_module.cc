#include "sources/module.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

namespace schedwatch::sidekiq_cron {

SourceModule Module() {
  return {MakeSidekiqCronSource, nullptr,
          "Sidekiq-cron loads its jobs from the application's config/schedule.yml at each "
          "start; a job written into Redis by another hand is dropped at the next deploy"};
}

}  // namespace schedwatch::sidekiq_cron
