#include "sources/github_actions/github_actions_discoverer.h"

#include <fmt/format.h>

#include <algorithm>

#include "sources/github_actions/github_mapping.h"

namespace schedwatch {
namespace {

std::string Stem(const std::string& path) {
  std::string name = path.substr(path.rfind('/') + 1);
  for (const char* extension : {".yml", ".yaml"}) {
    std::string_view suffix(extension);
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

}  // namespace

GitHubActionsDiscoverer::GitHubActionsDiscoverer(std::unique_ptr<GitHubActionsSource> source,
                                                 std::vector<JobSpec> jobs)
    : source_(std::move(source)), jobs_(std::move(jobs)) {}

Result<Discovery> GitHubActionsDiscoverer::Discover(const ListContext& context) {
  auto workflows = source_->ListEverything(context);
  if (!workflows) return Error{workflows.error()};
  Discovery discovery;
  for (const FoundWorkflow& found : *workflows) {
    const std::string& path = found.workflow.path;
    if (!found.file) {
      discovery.notes.push_back(fmt::format("{}: {}", path, found.file_problem));
      continue;
    }
    for (const auto& problem : found.file->problems) {
      discovery.notes.push_back(fmt::format("{}: {}", path, problem));
    }
    for (const auto& entry : found.file->schedules) {
      FoundObject object;
      object.id = fmt::format("{}:{}", path, entry.line);
      object.suggested_role = Stem(path);
      object.schedule = entry.cron;
      object.timezone = entry.timezone.empty() ? "UTC" : entry.timezone;
      object.spec_version = found.file->spec_version;
      object.marked = !found.file->spec_version.empty();
      object.job_keys = {{"workflow", path}};
      // The spec ties a workflow to its role by path: the job for this entry's schedule, or
      // the only job naming the file.
      std::vector<const JobSpec*> naming;
      for (const auto& job : jobs_) {
        if (job.workflow() == path) naming.push_back(&job);
      }
      for (const JobSpec* job : naming) {
        if (job->schedule.expression().text() == entry.cron || naming.size() == 1)
          object.role = job->role;
      }
      if (found.workflow.state != "active") {
        object.not_run_because = fmt::format("workflow {}", found.workflow.state);
      }
      AddLongestRun(found.runs, /*successes_only=*/true, object);
      discovery.objects.push_back(std::move(object));
    }
  }
  return discovery;
}

std::string GitHubActionsDiscoverer::MarkerInstructions(const FoundObject& object,
                                                        const std::string& role,
                                                        const std::string& spec_version) const {
  (void)role;  // a workflow's role is the job's `workflow:` path in the spec
  std::string path = object.id.substr(0, object.id.rfind(':'));
  return fmt::format("{}: add a comment line (and commit it)\n  # schedwatch: spec_version={}\n",
                     path, spec_version);
}

Result<std::unique_ptr<Discoverer>> MakeGitHubActionsDiscoverer(const SourceOptions& options,
                                                                GitHubActionsTuning tuning) {
  // The source of no job: the discoverer asks for every workflow itself.
  SourceOptions none{options.spec, {}, {}};
  auto source = GitHubActionsSource::Create(none, std::move(tuning));
  if (!source) return Error{source.error()};
  std::vector<JobSpec> jobs;
  for (const JobSpec* job : options.jobs) {
    jobs.push_back(*job);
    jobs.back().MutableExtras().workflow = github::NormalizeWorkflowPath(job->workflow());
  }
  return std::unique_ptr<Discoverer>(
      std::make_unique<GitHubActionsDiscoverer>(std::move(*source), std::move(jobs)));
}

}  // namespace schedwatch
