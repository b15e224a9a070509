#include "sources/gitlab/gitlab_descriptor.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/api_access_settings.h"
#include "schedwatch/spec.h"

namespace schedwatch::gitlab {
namespace {

// A project ID (digits) or a full path: group[/subgroup...]/name, no empty segment.
bool ValidProject(const std::string& project) {
  if (project.empty()) return false;
  if (std::all_of(project.begin(), project.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return true;
  }
  if (project.find('/') == std::string::npos) return false;
  if (project.front() == '/' || project.back() == '/' || project.find("//") != std::string::npos) {
    return false;
  }
  return std::all_of(project.begin(), project.end(),
                     [](char c) { return static_cast<unsigned char>(c) > 0x20 && c != 0x7f; });
}

class GitLabDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "gitlab"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"project", true},   {"token_file"}, {"token_env"},
                                              {"api_url"},         {"ca_file"},    {"ref"},
                                              {"worker_interval"}, {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<GitLabSettings>();
    ReadCommonSettings(reader, *settings);
    if (auto project = reader.String("project")) {
      if (!ValidProject(*project)) {
        reader.Problem(
            "project",
            fmt::format("expected a project ID or a group/name path, got \"{}\"", *project));
      }
      settings->project = *project;
    }
    ReadApiAccessSettings(reader, settings->token_file, settings->token_env, settings->api_url);
    if (settings->token_env == "CI_JOB_TOKEN") {
      reader.Problem("token_env",
                     "a CI job token cannot list pipeline schedules; use a personal, group or "
                     "project access token with the read_api scope (api to reconcile)");
    }
    settings->ca_file = reader.Path("ca_file").value_or("");
    if (auto ref = reader.String("ref")) {
      if (ref->empty()) reader.Problem("ref", "empty");
      settings->ref = *ref;
    }
    if (auto interval = reader.Wait("worker_interval")) settings->worker_interval = *interval;
    return settings;
  }

  const std::vector<JobKey>& job_keys() const override {
    static const std::vector<JobKey> keys{
        {"ref", false, "", "only gitlab jobs name the ref their pipeline schedule runs on"}};
    return keys;
  }

  void DecodeJob(SettingsReader& reader, JobSpec& job) const override {
    auto settings = std::make_shared<GitLabJobSettings>();
    if (auto ref = reader.String("ref")) {
      if (ref->empty()) reader.Problem("ref", "empty");
      settings->ref = *ref;
    }
    job.settings = std::move(settings);
  }

  std::string RefuseJobKey(std::string_view key) const override {
    if (key != "runs_dir") return "";
    return "gitlab pipelines run on GitLab's runners, where the exporter cannot read run "
           "records";
  }

  std::int64_t StartLatency(const SourceSettings& settings) const override {
    const auto* mine = dynamic_cast<const GitLabSettings*>(&settings);
    return mine != nullptr ? mine->worker_interval.count() : 0;
  }

  std::string RunHistoryOrigin(const SourceSettings&) const override {
    return "the pipelines of the pipeline schedule";
  }

  CronDialect dialect() const override { return CronDialect::kGitLab; }
  // fugit follows the zone's wall clock: a skipped time never fires, a repeated one twice.
  DstPolicy dst_policy() const override { return DstPolicy::kWallClock; }
};

}  // namespace

std::string DesiredRef(const JobSpec& job, const GitLabSettings& settings) {
  const auto* own = job.SettingsAs<GitLabJobSettings>();
  if (own != nullptr && !own->ref.empty()) return own->ref;
  return settings.ref;
}

const SourceDescriptor& Descriptor() {
  static const GitLabDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::gitlab
