#include "sources/gitlab/gitlab_source.h"

#include <fmt/format.h>

#include <map>

#include "schedwatch/platform/log.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

using gitlab::kPipelinesPerPage;
using gitlab::kSchedulesPerPage;
constexpr int kMaxSchedulePages = 100;  // 10,000 schedules: beyond that the answer is suspect

}  // namespace

Result<std::unique_ptr<GitLabSource>> GitLabSource::Create(const SourceOptions& options,
                                                           GitLabTuning tuning) {
  const SourceSpec& spec = *options.spec;
  const auto* settings = spec.SettingsAs<gitlab::GitLabSettings>();
  if (settings == nullptr) return Error{"the settings are not a gitlab source's"};
  std::unique_ptr<GitLabSource> source(new GitLabSource());
  source->project_ = settings->project;
  source->token_source_ = TokenSource(settings->token_file, settings->token_env);
  if (settings->api_url.rfind("http://", 0) == 0 && source->token_source_.configured()) {
    Log(LogLevel::kWarn, "the GitLab token goes over plain HTTP",
        {{"source", spec.name}, {"api_url", settings->api_url}});
  }
  if (!tuning.send) {
    TlsOptions tls;
    tls.ca_file = settings->ca_file;
    tuning.send = platform::TransportOver(std::make_shared<HttpClient>(std::move(tls)));
  }
  source->api_ = std::make_unique<gitlab::Api>(
      settings->api_url, settings->timeout.value_or(std::chrono::seconds(10)),
      std::move(tuning.send), tuning.clock != nullptr ? *tuning.clock : platform::RealClock());
  for (const JobSpec* job : options.jobs) {
    source->jobs_.push_back(*job);
    source->desired_refs_.push_back(gitlab::DesiredRef(*job, *settings));
  }
  source->counts_shared_reads_ = options.shard.CountsSharedReads();
  return source;
}

Result<std::unique_ptr<Source>> MakeGitLabSource(const SourceOptions& options) {
  auto source = GitLabSource::Create(options);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Source>(std::move(*source));
}

std::string GitLabSource::ProjectUrl() const {
  return api_->base_url() + "/projects/" + UrlEncode(project_);
}

void GitLabSource::InheritCaches(Source& previous) {
  auto* old = dynamic_cast<GitLabSource*>(&previous);
  if (old == nullptr) return;
  api_->InheritUsage(*old->api_);
  reported_inactive_ = old->reported_inactive_;
}

Result<bool> GitLabSource::PrepareToken() {
  auto token = token_source_.Load();
  if (!token) return Error{token.error()};
  if (token->rfind("glcbt-", 0) == 0) {
    return Error{
        "the token is a CI/CD job token (glcbt-), which cannot read pipeline schedules; use a "
        "personal, group or project access token with the read_api scope"};
  }
  if (*token != token_) {
    token_ = *token;
    api_->SetToken(token_);
  }
  return true;
}

Result<std::vector<gitlab::PipelineSchedule>> GitLabSource::Schedules(
    const ListContext& context, std::vector<SourceProblem>& problems) {
  std::vector<gitlab::PipelineSchedule> schedules;
  const std::string first =
      fmt::format("{}/pipeline_schedules?per_page={}&page=1", ProjectUrl(), kSchedulesPerPage);
  std::string url = first;
  std::set<std::string> followed;  // a next page read already is a circle
  ProblemSink item_problems;       // 8 M unreadable items are a count, not 8 M messages
  std::size_t listed = 0, unreadable = 0;
  for (int page = 1; !url.empty(); ++page) {
    if (page > kMaxSchedulePages) {
      return Error{fmt::format("more than {} pages of pipeline schedules", kMaxSchedulePages)};
    }
    if (!followed.insert(url).second) {
      return Error{fmt::format(
          "GET {}: the next page of pipeline schedules page {} is one read already; the list "
          "never completes",
          UrlPathForMessages(url), page - 1)};
    }
    auto answer = api_->Get(url, context.now, context.cancelled);
    for (const auto& recovered : api_->TakeRecovered()) {
      problems.push_back(RecoveredProblem(recovered));
    }
    if (!answer) return Error{answer.error()};
    auto parsed = gitlab::ParseSchedulePage(answer->body, item_problems, page);
    if (!parsed) return Error{fmt::format("GET {}: {}", UrlPathForMessages(url), parsed.error())};
    for (auto& schedule : parsed->schedules) schedules.push_back(std::move(schedule));
    listed += parsed->listed;
    unreadable += parsed->unreadable;
    url = answer->next;
  }
  // A list of which every item is unreadable is no list: its roles are unknown, not missing.
  std::vector<SourceProblem> listed_problems;
  item_problems.AppendTo(listed_problems);
  if (listed > 0 && unreadable == listed) {
    return Error{fmt::format("GET {}: none of the {} pipeline schedules can be read ({})",
                             UrlPathForMessages(first), listed, listed_problems.front().message)};
  }
  // Every shard reads the project's whole list of schedules.
  if (counts_shared_reads_) {
    problems.insert(problems.end(), listed_problems.begin(), listed_problems.end());
  }
  return schedules;
}

Result<RunHistory> GitLabSource::History(const ListContext& context,
                                         const gitlab::PipelineSchedule& schedule,
                                         std::vector<SourceProblem>& problems) {
  std::string url = fmt::format("{}/pipeline_schedules/{}/pipelines?per_page={}&sort=desc",
                                ProjectUrl(), schedule.id, kPipelinesPerPage);
  auto answer = api_->Get(url, context.now, context.cancelled, /*accept_not_found=*/true);
  for (const auto& recovered : api_->TakeRecovered()) {
    problems.push_back(RecoveredProblem(recovered));
  }
  if (!answer) return Error{answer.error()};
  RunHistory history;
  if (answer->status == 404) return history;  // deleted since the list: the next read tells
  std::string what = fmt::format("pipelines of schedule {}", schedule.id);
  auto page = gitlab::ParsePipelinePage(answer->body, what);
  if (!page) return Error{fmt::format("GET {}: {}", UrlPathForMessages(url), page.error())};
  if (page->listed > 0 && page->problems.size() == page->listed) {
    return Error{fmt::format("GET {}: none of the {} pipelines can be read ({})",
                             UrlPathForMessages(url), page->listed,
                             page->problems.front().message)};
  }
  for (const auto& pipeline : page->pipelines) gitlab::AddPipeline(history, pipeline);
  problems.insert(problems.end(), page->problems.begin(), page->problems.end());
  return history;
}

Result<SourceSnapshot> GitLabSource::List(const ListContext& context) {
  auto token = PrepareToken();
  if (!token) return Error{token.error()};
  SourceSnapshot snapshot;
  auto schedules = Schedules(context, snapshot.problems);
  if (!schedules) return Error{schedules.error()};

  std::map<std::string, std::size_t> job_by_role;
  for (std::size_t i = 0; i < jobs_.size(); ++i) job_by_role[jobs_[i].role] = i;
  std::set<std::int64_t> inactive_now;
  for (const auto& schedule : *schedules) {
    if (!schedule.marker) continue;  // not schedwatch's
    if (!*schedule.marker) {
      // Whose role it is cannot be told: a problem of the list every shard reads.
      if (counts_shared_reads_) {
        snapshot.problems.push_back(MakeProblem(
            Reason::kMalformedMarker,
            fmt::format("pipeline schedule {}: {}", schedule.id, schedule.marker->error())));
      }
      continue;
    }
    const Marker& marker = **schedule.marker;
    auto job = job_by_role.find(marker.role);
    if (job == job_by_role.end()) {
      // A role the spec does not name: shown as unowned, not read further.
      snapshot.objects.emplace_back(std::to_string(schedule.id), marker.role, schedule.cron,
                                    gitlab::IanaZone(schedule.cron_timezone), marker.spec_version,
                                    schedule.active);
      continue;
    }
    const JobSpec& spec = jobs_[job->second];
    snapshot.objects.push_back(gitlab::MakeLiveObject(schedule, spec, desired_refs_[job->second]));
    if (!schedule.active) {
      inactive_now.insert(schedule.id);
      SourceProblem problem =
          MakeProblem(Reason::kScheduleDeactivated,
                      fmt::format("pipeline schedule {} (role {}) is {}", schedule.id, spec.role,
                                  gitlab::InactiveReason(schedule)));
      problem.counted_before = reported_inactive_.count(schedule.id) > 0;
      snapshot.problems.push_back(std::move(problem));
    }
    // After one pipelines read failed, none is asked for: the list goes on without its history.
    if (!snapshot.history_error.empty()) continue;
    auto history = History(context, schedule, snapshot.problems);
    if (history) {
      snapshot.history[spec.role].Merge(*history);
    } else {
      snapshot.history_error = history.error();
      snapshot.history.clear();
    }
  }
  reported_inactive_ = std::move(inactive_now);
  snapshot.problems = CapProblems(std::move(snapshot.problems));
  return snapshot;
}

}  // namespace schedwatch
