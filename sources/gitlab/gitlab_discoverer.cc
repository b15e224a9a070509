#include "sources/gitlab/gitlab_discoverer.h"

#include <fmt/format.h>

#include <algorithm>

namespace schedwatch {

GitLabDiscoverer::GitLabDiscoverer(std::unique_ptr<GitLabSource> source)
    : source_(std::move(source)) {}

Result<Discovery> GitLabDiscoverer::Discover(const ListContext& context) {
  auto token = source_->PrepareToken();
  if (!token) return Error{token.error()};
  std::vector<SourceProblem> problems;
  auto schedules = source_->Schedules(context, problems);
  if (!schedules) return Error{schedules.error()};
  std::sort(schedules->begin(), schedules->end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  Discovery discovery;
  schedule_ids_.clear();
  texts_.clear();
  for (const auto& schedule : *schedules) {
    FoundObject object;
    object.id = fmt::format("pipeline schedule {}", schedule.id);
    if (schedule.marker && !*schedule.marker) {
      discovery.notes.push_back(
          fmt::format("{}: {}: its marker is no job's", object.id, schedule.marker->error()));
      continue;
    }
    if (schedule.marker) {
      object.role = (*schedule.marker)->role;
      object.spec_version = (*schedule.marker)->spec_version;
      object.marked = !object.spec_version.empty();
    }
    std::string text = DescriptionWithoutMarker(schedule.description);
    object.suggested_role = text.empty() ? fmt::format("schedule-{}", schedule.id) : text;
    object.schedule = schedule.cron;
    // A zone GitLab would not know stays as it is: discover then says it cannot be a job.
    std::string zone = gitlab::IanaZone(schedule.cron_timezone);
    object.timezone = zone.empty() ? schedule.cron_timezone : zone;
    if (!schedule.ref.empty()) object.job_keys = {{"ref", gitlab::ShortRef(schedule.ref)}};
    if (!schedule.active) {
      object.not_run_because = gitlab::InactiveReason(schedule);
    } else {
      auto history = source_->History(context, schedule, problems);
      if (!history) return Error{history.error()};
      AddLongestRun(*history, /*successes_only=*/true, object);
    }
    schedule_ids_[object.id] = schedule.id;
    texts_[object.id] = text;
    discovery.objects.push_back(std::move(object));
  }
  for (const auto& problem : problems) {
    discovery.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
  }
  return discovery;
}

std::string GitLabDiscoverer::MarkerInstructions(const FoundObject& object, const std::string& role,
                                                 const std::string& spec_version) const {
  auto text = texts_.find(object.id);
  std::string description = gitlab::DescriptionWithMarker(text == texts_.end() ? "" : text->second,
                                                          Marker{role, spec_version});
  auto id = schedule_ids_.find(object.id);
  std::string url = fmt::format("{}/pipeline_schedules/{}", source_->ProjectUrl(),
                                id == schedule_ids_.end() ? 0 : id->second);
  return fmt::format(
      "{}: set its description to\n  {}\n  curl --request PUT --header \"PRIVATE-TOKEN: "
      "$GITLAB_TOKEN\" --data-urlencode {} {}\n",
      object.id, description, ShellWord("description=" + description), ShellWord(url));
}

Result<std::unique_ptr<Discoverer>> MakeGitLabDiscoverer(const SourceOptions& options,
                                                         GitLabTuning tuning) {
  // The source of no job: the discoverer reads every schedule itself.
  SourceOptions none{options.spec, {}, {}};
  auto source = GitLabSource::Create(none, std::move(tuning));
  if (!source) return Error{source.error()};
  return std::unique_ptr<Discoverer>(std::make_unique<GitLabDiscoverer>(std::move(*source)));
}

}  // namespace schedwatch
