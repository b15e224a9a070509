#include "sources/gitlab/gitlab_repairer.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "schedwatch/yaml_tree.h"
#include "sources/api_answers.h"
#include "sources/gitlab/gitlab_api.h"
#include "sources/gitlab/gitlab_descriptor.h"
#include "sources/gitlab/gitlab_mapping.h"
#include "sources/token.h"

namespace schedwatch::gitlab {
namespace {

constexpr std::size_t kMaxVariables = 100;
constexpr int kMaxPages = 1000;  // 100,000 schedules
constexpr std::string_view kPendingMarker = "schedwatch-pending:";

std::string Form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string form;
  for (const auto& [key, value] : fields) {
    if (!form.empty()) form += '&';
    form += UrlEncode(key) + "=" + UrlEncode(value);
  }
  return form;
}

Result<std::string> ScalarAt(YamlNode mapping, std::string_view key, bool required) {
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    if (mapping.key(i).IsScalar() && mapping.key(i).scalar() == key) {
      YamlNode value = mapping.value(i);
      if (!value.IsScalar()) return Error{fmt::format("{}: must be a string", key)};
      return std::string(value.scalar());
    }
  }
  if (required) return Error{fmt::format("{}: missing", key)};
  return std::string();
}

class GitLabRepairer : public Repairer {
 public:
  GitLabRepairer(const GitLabSettings& settings, std::unique_ptr<Api> api)
      : settings_(settings),
        tokens_(settings.token_file, settings.token_env),
        api_(std::move(api)) {}

  Result<bool> Validate(const JobSpec& job, const std::string& template_text) override {
    auto parsed = ReadScheduleTemplate(template_text, job, DesiredRef(job, settings_));
    if (!parsed) return Error{parsed.error()};
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& template_text) override {
    auto parsed = ReadScheduleTemplate(template_text, job, DesiredRef(job, settings_));
    if (!parsed) return Error{parsed.error()};
    auto token = tokens_.Load();
    if (!token) return Error{token.error()};
    api_->SetToken(*token);
    const std::string schedules =
        api_->base_url() + "/projects/" + UrlEncode(settings_.project) + "/pipeline_schedules";
    const std::int64_t now = std::time(nullptr);
    // An earlier run's pending schedule is carried on with, not made again.
    auto pending = FindPending(schedules, parsed->pending_description, now);
    if (!pending) return Error{pending.error()};
    std::int64_t id = pending->value_or(0);
    if (!*pending) {
      auto created = api_->PostForm(schedules, parsed->form, now, nullptr);
      if (!created) return Error{created.error()};
      auto json = api::ParseBounded(created->body);
      if (!json || !json->is_object() || !json->contains("id") ||
          !(*json)["id"].is_number_integer()) {
        return Error{"the created pipeline schedule's answer holds no id"};
      }
      id = (*json)["id"].get<std::int64_t>();
    }
    const std::string schedule = fmt::format("{}/{}", schedules, id);
    std::set<std::string> present;
    if (*pending && !parsed->variables.empty()) {
      auto read = api_->Get(schedule, now, nullptr);
      if (!read) return Error{fmt::format("pipeline schedule {}: {}", id, read.error())};
      auto json = api::ParseBounded(read->body);
      if (json && json->is_object() && json->contains("variables") &&
          (*json)["variables"].is_array()) {
        for (const auto& variable : (*json)["variables"]) {
          if (variable.is_object() && variable.contains("key") && variable["key"].is_string()) {
            present.insert(variable["key"].get<std::string>());
          }
        }
      }
    }
    for (const auto& [key, form] : parsed->variables) {
      if (present.count(key)) continue;
      auto added = api_->PostForm(schedule + "/variables", form, now, nullptr);
      if (!added) {
        return Error{
            fmt::format("pipeline schedule {} created, inactive, but a variable was not "
                        "(the next run adds it): {}",
                        id, added.error())};
      }
    }
    auto finished = api_->PutForm(schedule, parsed->finish, now, nullptr);
    if (!finished) {
      return Error{
          fmt::format("pipeline schedule {} created, inactive, but not activated (the "
                      "next run does it): {}",
                      id, finished.error())};
    }
    return Creation{fmt::format("pipeline schedule {}", id), false};
  }

 private:
  // The lowest ID of a schedule under the pending `description`, if any. The schedules are
  // listed once a run (a repairer serves one run): each role has its own pending description.
  Result<std::optional<std::int64_t>> FindPending(const std::string& schedules,
                                                  const std::string& description,
                                                  std::int64_t now) {
    if (!pending_) {
      std::map<std::string, std::int64_t> pending;
      std::string url = schedules + "?per_page=100&page=1";
      for (int page = 0; !url.empty(); ++page) {
        if (page == kMaxPages) return Error{"too many pages of pipeline schedules"};
        auto answer = api_->Get(url, now, nullptr);
        if (!answer) return Error{answer.error()};
        auto json = api::ParseBounded(answer->body);
        if (!json || !json->is_array()) {
          return Error{"the pipeline schedules' answer is not a list"};
        }
        for (const auto& item : *json) {
          if (!item.is_object() || !item.contains("id") || !item["id"].is_number_integer() ||
              !item.contains("description") || !item["description"].is_string()) {
            continue;
          }
          auto text = item["description"].get<std::string>();
          if (text.find(kPendingMarker) == std::string::npos) continue;
          auto id = item["id"].get<std::int64_t>();
          auto [it, added] = pending.emplace(std::move(text), id);
          if (!added) it->second = std::min(it->second, id);
        }
        url = answer->next;
      }
      pending_ = std::move(pending);
    }
    auto it = pending_->find(description);
    if (it == pending_->end()) return std::optional<std::int64_t>();
    return std::optional<std::int64_t>(it->second);
  }

  GitLabSettings settings_;
  TokenSource tokens_;
  std::unique_ptr<Api> api_;
  std::optional<std::map<std::string, std::int64_t>> pending_;  // description -> lowest ID
};

}  // namespace

Result<ScheduleTemplate> ReadScheduleTemplate(std::string_view text, const JobSpec& job,
                                              const std::string& desired_ref) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{"not YAML: " + document.error()};
  YamlNode root = document->root();
  if (!root.IsMapping()) return Error{"must be a mapping of a pipeline schedule's attributes"};
  static const std::set<std::string_view> kKeys = {"description",   "ref",    "cron",
                                                   "cron_timezone", "active", "variables"};
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (!root.key(i).IsScalar() || !kKeys.count(root.key(i).scalar())) {
      return Error{
          fmt::format("unknown key {} (description, ref, cron, cron_timezone, active, variables)",
                      root.key(i).Describe())};
    }
  }
  PipelineSchedule schedule;
  for (auto [key, target, required] :
       {std::tuple{"description", &schedule.description, true},
        std::tuple{"ref", &schedule.ref, true}, std::tuple{"cron", &schedule.cron, true},
        std::tuple{"cron_timezone", &schedule.cron_timezone, false}}) {
    auto value = ScalarAt(root, key, required);
    if (!value) return Error{value.error()};
    *target = *value;
  }
  auto active = ScalarAt(root, "active", false);
  if (!active) return Error{active.error()};
  if (!active->empty() && *active != "true" && *active != "false") {
    return Error{"active: must be true or false"};
  }
  schedule.active = *active != "false";
  schedule.marker = DescriptionMarker(schedule.description);
  if (!schedule.marker) {
    return Error{fmt::format("description: must carry [schedwatch: role={} spec_version={}]",
                             job.role, job.spec_version)};
  }
  if (!*schedule.marker) return Error{"description: " + schedule.marker->error()};
  if ((*schedule.marker)->role != job.role) {
    return Error{fmt::format("description: the marker's role is {}, not {}",
                             (*schedule.marker)->role, job.role)};
  }
  if (!schedule.active) return Error{"active: false would create an inactive schedule"};
  if (!schedule.cron_timezone.empty() && IanaZone(schedule.cron_timezone).empty()) {
    return Error{fmt::format("cron_timezone: GitLab knows no zone \"{}\"", schedule.cron_timezone)};
  }
  LiveObject object = MakeLiveObject(schedule, job, desired_ref);
  if (!object.other_drift().empty()) return Error{"ref: " + std::string(object.other_drift())};
  if (Drifted(job, object)) {
    return Error{fmt::format(
        "cron \"{}\" in {}, spec_version {}: not the job's schedule \"{}\" in {}, spec_version {}",
        schedule.cron, object.timezone(), object.spec_version(), job.schedule.expression().text(),
        job.timezone, job.spec_version)};
  }

  ScheduleTemplate result;
  result.pending_description = PendingDescription(schedule.description);
  std::vector<std::pair<std::string, std::string>> fields = {
      {"description", result.pending_description},
      {"ref", schedule.ref},
      {"cron", schedule.cron},
      {"active", "false"}};
  if (!schedule.cron_timezone.empty()) fields.emplace_back("cron_timezone", schedule.cron_timezone);
  result.form = Form(fields);
  result.finish = Form({{"description", schedule.description}, {"active", "true"}});
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (root.key(i).scalar() != "variables") continue;
    YamlNode list = root.value(i);
    if (!list.IsSequence()) return Error{"variables: must be a list"};
    if (list.size() > kMaxVariables) {
      return Error{fmt::format("variables: more than {}", kMaxVariables)};
    }
    for (std::size_t v = 0; v < list.size(); ++v) {
      YamlNode item = list.item(v);
      if (!item.IsMapping()) return Error{fmt::format("variables[{}]: must be a mapping", v)};
      std::vector<std::pair<std::string, std::string>> variable;
      std::string variable_key;
      for (auto [key, required] :
           {std::pair{"key", true}, std::pair{"value", true}, std::pair{"variable_type", false}}) {
        auto value = ScalarAt(item, key, required);
        if (!value) return Error{fmt::format("variables[{}].{}", v, value.error())};
        if (!value->empty() || required) variable.emplace_back(key, *value);
        if (std::string_view(key) == "key") variable_key = *value;
      }
      result.variables.emplace_back(variable_key, Form(variable));
    }
  }
  return result;
}

std::string PendingDescription(std::string_view description) {
  std::string pending(description);
  constexpr std::string_view kMarker = "schedwatch:";
  for (auto at = pending.find(kMarker); at != std::string::npos;
       at = pending.find(kMarker, at + 1)) {
    pending.replace(at, kMarker.size(), kPendingMarker);
  }
  return pending;
}

Result<std::unique_ptr<Repairer>> MakeGitLabRepairer(const SourceSpec& source) {
  const auto* settings = source.SettingsAs<GitLabSettings>();
  if (settings == nullptr) return Error{"the settings are not a gitlab source's"};
  TlsOptions tls;
  tls.ca_file = settings->ca_file;
  auto api =
      std::make_unique<Api>(settings->api_url, settings->timeout.value_or(std::chrono::seconds(30)),
                            platform::TransportOver(std::make_shared<HttpClient>(std::move(tls))));
  return std::unique_ptr<Repairer>(new GitLabRepairer(*settings, std::move(api)));
}

}  // namespace schedwatch::gitlab
