#include "sources/github_actions/github_actions_descriptor.h"

#include <fmt/format.h>

#include "schedwatch/api_access_settings.h"
#include "schedwatch/spec.h"

namespace schedwatch::github_actions {
namespace {

class GitHubActionsDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "github_actions"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{
        {"repository", true}, {"token_file"},   {"token_env"}, {"api_url"},
        {"branch"},           {"min_interval"}, {"ca_file"},   {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<GitHubActionsSettings>();
    ReadCommonSettings(reader, *settings);
    if (auto repository = reader.String("repository")) {
      auto slash = repository->find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == repository->size() ||
          repository->find('/', slash + 1) != std::string::npos) {
        reader.Problem("repository", fmt::format("expected owner/name, got \"{}\"", *repository));
      }
      settings->repository = *repository;
    }
    ReadApiAccessSettings(reader, settings->token_file, settings->token_env, settings->api_url);
    settings->branch = reader.String("branch").value_or("");
    settings->min_interval = reader.Wait("min_interval");
    settings->ca_file = reader.Path("ca_file").value_or("");
    return settings;
  }

  const std::vector<JobKey>& job_keys() const override {
    static const std::vector<JobKey> keys{
        {"workflow", true,
         "github_actions jobs name their workflow file, e.g. .github/workflows/report.yml",
         "only github_actions jobs name a workflow file"},
        {"require_concurrency", false, "",
         "only github_actions jobs have a workflow concurrency: group (other jobs use "
         "schedwatch_run's guard)"}};
    return keys;
  }

  void DecodeJob(SettingsReader& reader, JobSpec& job) const override {
    if (auto workflow = reader.String("workflow")) {
      if (workflow->empty()) reader.Problem("workflow", "empty");
      job.MutableExtras().workflow = *workflow;
    }
    if (reader.Bool("require_concurrency").value_or(false)) {
      job.MutableExtras().require_concurrency = true;
    }
  }

  std::string RefuseJobKey(std::string_view key) const override {
    if (key != "runs_dir") return "";
    return "github_actions runs happen on GitHub's runners, where the exporter cannot read run "
           "records; use the workflow's concurrency: group (require_concurrency: true)";
  }

  std::string RunHistoryOrigin(const SourceSettings&) const override {
    return "scheduled workflow runs";
  }

  // GitHub documents POSIX cron syntax and evaluates schedules in UTC.
  CronDialect dialect() const override { return CronDialect::kGitHubActions; }
};

}  // namespace

const SourceDescriptor& Descriptor() {
  static const GitHubActionsDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::github_actions
