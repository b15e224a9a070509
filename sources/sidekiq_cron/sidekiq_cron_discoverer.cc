#include "sources/sidekiq_cron/sidekiq_cron_discoverer.h"

#include <fmt/format.h>

#include <algorithm>

namespace schedwatch {

Result<Discovery> SidekiqCronDiscoverer::Discover(const ListContext&) {
  auto redis = source_->Connect();
  if (!redis) return Error{redis.error()};
  std::vector<SourceProblem> problems;
  auto jobs = source_->Jobs(**redis, problems);
  if (!jobs) return Error{jobs.error()};
  std::sort(jobs->begin(), jobs->end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  Discovery discovery;
  texts_.clear();
  for (const auto& job : *jobs) {
    FoundObject object;
    object.id = job.name;
    if (job.marker && !*job.marker) {
      discovery.notes.push_back(
          fmt::format("cron job {}: {}: its marker is no job's", job.name, job.marker->error()));
      continue;
    }
    if (job.marker) {
      object.role = (*job.marker)->role;
      object.spec_version = (*job.marker)->spec_version;
      object.marked = !object.spec_version.empty();
    }
    object.suggested_role = job.name;
    LiveObject live = sidekiq_cron::MakeLiveObject(job, "", "", source_->local_zone());
    object.schedule = std::string(live.schedule());
    object.timezone = std::string(live.timezone());
    if (!job.enabled()) {
      object.not_run_because = fmt::format("its status is {} in Sidekiq-cron", job.status);
    }
    texts_[job.name] = DescriptionWithoutMarker(job.description);
    discovery.objects.push_back(std::move(object));
  }
  // Sidekiq keeps no success nor duration: max_runtime cannot be drafted from runs.
  discovery.notes.push_back(
      "Sidekiq records no run's duration: set max_runtime from what the jobs need");
  for (const auto& problem : problems) {
    discovery.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
  }
  return discovery;
}

std::string SidekiqCronDiscoverer::MarkerInstructions(const FoundObject& object,
                                                      const std::string& role,
                                                      const std::string& spec_version) const {
  auto text = texts_.find(object.id);
  std::string description =
      DescriptionWithMarker(text == texts_.end() ? "" : text->second, Marker{role, spec_version});
  std::string quoted;
  for (char c : description) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return fmt::format("cron job {}: in config/schedule.yml, under {}:, set\n  description: \"{}\"\n",
                     object.id, object.id, quoted);
}

Result<std::unique_ptr<Discoverer>> MakeSidekiqCronDiscoverer(const SourceOptions& options) {
  SourceOptions none{options.spec, {}, {}};  // the source of no job: discover reads every job
  auto source = SidekiqCronSource::Create(none);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Discoverer>(std::make_unique<SidekiqCronDiscoverer>(std::move(*source)));
}

}  // namespace schedwatch
