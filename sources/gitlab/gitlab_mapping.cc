#include "sources/gitlab/gitlab_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "schedwatch/platform/api_client.h"
#include "schedwatch/schedule.h"
#include "schedwatch/timefmt.h"
#include "sources/api_answers.h"
#include "sources/gitlab/gitlab_descriptor.h"
#include "sources/problems.h"

namespace schedwatch::gitlab {
namespace {

using api::Json;

constexpr std::size_t kMaxMessageChars = 200;

using api::Field;
using api::StringField;
using api::TimeField;

std::optional<std::int64_t> IdField(const Json& object, const char* key) {
  const Json* value = Field(object, key);
  if (value == nullptr || !value->is_number_integer()) return std::nullopt;
  auto id = value->get<std::int64_t>();
  return id > 0 ? std::optional<std::int64_t>(id) : std::nullopt;
}

// Printable and short: it ends up in logs and on the status page.
std::string Shorten(std::string text, std::size_t limit) {
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  for (char& c : text) {
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  }
  return text;
}

// UTF-8 characters, as GitLab counts its limits: bytes but continuation bytes.
std::size_t Characters(std::string_view text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

// A string field within GitLab's limit; why not otherwise (absent: nullopt and no why).
std::optional<std::string> TextField(const Json& item, const char* key, std::string& why) {
  const Json* value = Field(item, key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  const auto& text = value->get_ref<const std::string&>();
  if (text.size() > kMaxTextChars && Characters(text) > kMaxTextChars) {
    if (why.empty()) why = fmt::format("its {} is longer than {} characters", key, kMaxTextChars);
    return std::nullopt;
  }
  return text;
}

// The value of `key` in a URL's query; empty when absent.
std::string QueryValue(const std::string& url, std::string_view key) {
  std::size_t query = url.find('?');
  if (query == std::string::npos) return {};
  std::string_view rest = std::string_view(url).substr(query + 1);
  while (!rest.empty()) {
    std::size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    if (pair.substr(0, key.size()) == key && pair.size() > key.size() && pair[key.size()] == '=') {
      return std::string(pair.substr(key.size() + 1));
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace

std::string ShortRef(std::string_view ref) {
  for (std::string_view prefix : {"refs/heads/", "refs/tags/"}) {
    if (ref.substr(0, prefix.size()) == prefix) return std::string(ref.substr(prefix.size()));
  }
  return std::string(ref);
}

std::string IanaZone(std::string_view cron_timezone) {
  if (cron_timezone.empty()) return "UTC";  // GitLab's default
  std::string rails = RailsZoneToIana(cron_timezone);
  if (!rails.empty()) return rails;
  return FindZone(cron_timezone) != nullptr ? std::string(cron_timezone) : std::string();
}

Result<SchedulePage> ParseSchedulePage(std::string_view body, ProblemSink& problems, int page) {
  SchedulePage result;
  auto read = api::ReadItems(
      body, nullptr, "pipeline schedules", kSchedulesPerPage,
      [&](const Json* item, std::size_t index, const char* bound) {
        std::string why = bound != nullptr ? bound : "";
        PipelineSchedule schedule;
        if (item != nullptr && !item->is_object()) why = "not an object";
        if (why.empty()) {
          auto id = IdField(*item, "id");
          auto cron = TextField(*item, "cron", why);
          auto ref = TextField(*item, "ref", why);
          const Json* active = Field(*item, "active");
          auto description = TextField(*item, "description", why);
          auto zone = TextField(*item, "cron_timezone", why);
          if (why.empty() && (!id || !cron || !ref || active == nullptr || !active->is_boolean())) {
            why = "lacks id, cron, ref or active";
          }
          if (why.empty()) {
            schedule.id = *id;
            schedule.cron = std::move(*cron);
            schedule.ref = std::move(*ref);
            schedule.active = active->get<bool>();
            schedule.description = description.value_or("");
            schedule.cron_timezone = zone.value_or("");
          }
        }
        if (!why.empty()) {
          ++result.unreadable;
          // Formatted only while the sink lists: 8 M unreadable items cost a count.
          problems.Add(Reason::kMalformedObject, [&] {
            return fmt::format("schedules page {}: pipeline schedule #{} on the page: {}", page,
                               index + 1, why);
          });
          return;
        }
        schedule.next_run_at = TimeField(*item, "next_run_at");
        if (const Json* owner = Field(*item, "owner"); owner != nullptr && owner->is_object()) {
          schedule.owner = Shorten(StringField(*owner, "username").value_or(""), kMaxTextChars);
          schedule.owner_state = Shorten(StringField(*owner, "state").value_or(""), 40);
        }
        schedule.marker = DescriptionMarker(schedule.description);
        result.schedules.push_back(std::move(schedule));
      });
  if (!read) return Error{read.error()};
  result.listed = *read;
  return result;
}

LiveObject MakeLiveObject(const PipelineSchedule& schedule, const JobSpec& job,
                          const std::string& desired_ref) {
  std::string zone = IanaZone(schedule.cron_timezone);
  std::string spec_version;
  if (schedule.marker && *schedule.marker) spec_version = (*schedule.marker)->spec_version;
  // An unknown zone is drift: GitLab would not accept it, the job's zone is not it.
  LiveObject object(std::to_string(schedule.id), job.role, schedule.cron,
                    zone.empty() ? Shorten(schedule.cron_timezone, 64) : zone, spec_version,
                    schedule.active);
  if (!desired_ref.empty() && ShortRef(schedule.ref) != ShortRef(desired_ref)) {
    object.set_other_drift(
        fmt::format("runs on ref {}, the spec says {}", Shorten(schedule.ref, 100), desired_ref));
  }
  return object;
}

std::string InactiveReason(const PipelineSchedule& schedule) {
  if (schedule.active) return {};
  if (schedule.owner.empty()) {
    return "inactive and without an owner: GitLab deactivates a schedule whose owner is gone; "
           "someone with the Developer role must take ownership and activate it";
  }
  if (!schedule.owner_state.empty() && schedule.owner_state != "active") {
    return fmt::format(
        "inactive: its owner {} is {}; GitLab deactivates a schedule whose owner can no longer "
        "run pipelines; someone with the Developer role must take ownership and activate it",
        schedule.owner, schedule.owner_state);
  }
  return fmt::format(
      "inactive (owner {}): deactivated by hand, or because its owner lost access to the "
      "project; take ownership and activate it",
      schedule.owner);
}

Result<PipelinePage> ParsePipelinePage(std::string_view body, const std::string& what) {
  PipelinePage page;
  auto read = api::ReadItems(
      body, nullptr, "pipelines", kPipelinesPerPage,
      [&](const Json* item, std::size_t, const char* bound) {
        auto problem = [&](const std::string& text) {
          page.problems.push_back(
              MakeProblem(Reason::kMalformedObject, fmt::format("{}: {}", what, text)));
        };
        if (item == nullptr) return problem(fmt::format("a pipeline that is not read: {}", bound));
        if (!item->is_object()) return problem("a pipeline that is not an object");
        auto id = IdField(*item, "id");
        auto status = StringField(*item, "status");
        auto created = TimeField(*item, "created_at");
        if (!id || !status || !created)
          return problem("a pipeline without id, status or created_at");
        Pipeline pipeline;
        pipeline.id = *id;
        pipeline.created = *created;
        pipeline.web_url = StringField(*item, "web_url").value_or("");
        const std::string& s = *status;
        if (s == "created" || s == "waiting_for_resource" || s == "preparing" || s == "pending" ||
            s == "running" || s == "manual" || s == "scheduled") {
          pipeline.state = api::RunState::kRunning;  // manual, scheduled: waiting, not done
        } else if (s == "success") {
          pipeline.state = api::RunState::kSucceeded;
        } else if (s == "failed") {
          pipeline.state = api::RunState::kFailed;
        } else if (s == "canceled" || s == "canceling" || s == "skipped") {
          pipeline.state = api::RunState::kEnded;
        } else {
          return problem(
              fmt::format("pipeline {} has an unknown status \"{}\"", *id, Shorten(s, 40)));
        }
        if (pipeline.state != api::RunState::kRunning) {
          pipeline.finished = TimeField(*item, "finished_at");
          if (!pipeline.finished) pipeline.finished = TimeField(*item, "updated_at");
          if (!pipeline.finished) pipeline.finished = pipeline.created;
        }
        page.pipelines.push_back(pipeline);
      });
  if (!read) return Error{read.error()};
  page.listed = *read;
  return page;
}

void AddPipeline(RunHistory& history, const Pipeline& pipeline) {
  api::AddRun(history, pipeline.created, pipeline.finished, pipeline.state,
              std::make_shared<const RunIdentity>(
                  RunIdentity{std::to_string(pipeline.id), pipeline.web_url}));
}

std::string ErrorMessage(std::string_view body) {
  auto parsed = api::ParseBounded(body);
  if (!parsed || !parsed->is_object()) return {};
  const Json& json = *parsed;
  std::string message;
  if (const Json* value = Field(json, "message")) {
    message = value->is_string() ? value->get<std::string>() : value->dump();
  } else if (auto description = StringField(json, "error_description")) {
    message = *description;
    if (auto scope = StringField(json, "scope")) message += " (scope " + *scope + " needed)";
  } else if (auto error = StringField(json, "error")) {
    message = *error;
  }
  return Shorten(std::move(message), kMaxMessageChars);
}

std::string NextPageUrl(const std::string& url, const std::map<std::string, std::string>& headers) {
  auto link = headers.find("link");
  if (link != headers.end()) {
    std::string next = platform::NextLink(link->second);
    if (!next.empty()) return next;
  }
  auto page = platform::IntegerHeader(headers, "x-next-page");
  if (!page || *page < 1) return {};
  std::string current = QueryValue(url, "page");
  std::string value = std::to_string(*page);
  if (current == value) return url;  // names itself as next: the caller's loop guard says so
  if (current.empty())
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "page=" + value;
  std::string key = "page=" + current;
  std::size_t at = url.find("?" + key);
  if (at == std::string::npos) at = url.find("&" + key);
  return url.substr(0, at + 1) + "page=" + value + url.substr(at + 1 + key.size());
}

}  // namespace schedwatch::gitlab
