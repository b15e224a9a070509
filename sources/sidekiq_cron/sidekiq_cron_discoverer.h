// `discover` for Sidekiq-cron: every cron job in Redis, marked or not: its cron split from its
// zone suffix, disabled jobs as comments, and for each unmarked job the description to set in
// config/schedule.yml (discover never writes to Redis: the schedule file is the source of truth).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sources/discoverer.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

namespace schedwatch {

class SidekiqCronDiscoverer : public Discoverer {
 public:
  explicit SidekiqCronDiscoverer(std::unique_ptr<SidekiqCronSource> source)
      : source_(std::move(source)) {}
  Result<Discovery> Discover(const ListContext& context) override;
  // The job's entry in config/schedule.yml with the marker in its description.
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;

 private:
  std::unique_ptr<SidekiqCronSource> source_;
  std::map<std::string, std::string> texts_;  // job name -> its description without the marker
};

Result<std::unique_ptr<Discoverer>> MakeSidekiqCronDiscoverer(const SourceOptions& options);

}  // namespace schedwatch
