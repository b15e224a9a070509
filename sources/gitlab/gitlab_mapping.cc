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
constexpr std::size_t kMaxTextChars = 255;  // GitLab's own limit on a description

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

Result<Json> ParseArray(std::string_view body, const char* what) {
  Json json = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error{"the answer is not JSON"};
  if (!json.is_array()) return Error{fmt::format("the answer is not a list of {}", what)};
  return json;
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

std::optional<Result<Marker>> DescriptionMarker(std::string_view description) {
  constexpr std::string_view kPrefix = "schedwatch:";
  std::size_t at = description.find(kPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view marker = description.substr(at);
  // "[schedwatch: ...]" inside a longer description ends at its bracket.
  if (at > 0 && description[at - 1] == '[') {
    std::size_t close = marker.find(']');
    if (close == std::string_view::npos) {
      return Result<Marker>(Error{"marker \"[schedwatch: ...\" has no closing ']'"});
    }
    marker = marker.substr(0, close);
  }
  return ParseMarker(marker);
}

std::string DescriptionWithMarker(std::string_view text, const Marker& marker) {
  std::string description(text);
  if (!description.empty()) description += ' ';
  return description + "[" + FormatMarker(marker) + "]";
}

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

Result<SchedulePage> ParseSchedulePage(std::string_view body) {
  auto json = ParseArray(body, "pipeline schedules");
  if (!json) return Error{json.error()};
  SchedulePage page;
  page.listed = json->size();
  std::size_t index = 0;
  for (const Json& item : *json) {
    ++index;
    auto problem = [&](const std::string& what) {
      page.problems.push_back(
          MakeProblem(Reason::kMalformedObject,
                      fmt::format("pipeline schedule #{} on the page: {}", index, what)));
    };
    if (!item.is_object()) {
      problem("not an object");
      continue;
    }
    PipelineSchedule schedule;
    auto id = IdField(item, "id");
    auto cron = StringField(item, "cron");
    auto ref = StringField(item, "ref");
    const Json* active = Field(item, "active");
    if (!id || !cron || !ref || active == nullptr || !active->is_boolean()) {
      problem("lacks id, cron, ref or active");
      continue;
    }
    schedule.id = *id;
    schedule.cron = *cron;
    schedule.ref = *ref;
    schedule.active = active->get<bool>();
    schedule.description = StringField(item, "description").value_or("");
    schedule.cron_timezone = StringField(item, "cron_timezone").value_or("");
    schedule.next_run_at = TimeField(item, "next_run_at");
    if (const Json* owner = Field(item, "owner"); owner != nullptr && owner->is_object()) {
      schedule.owner = Shorten(StringField(*owner, "username").value_or(""), kMaxTextChars);
      schedule.owner_state = Shorten(StringField(*owner, "state").value_or(""), 40);
    }
    schedule.marker = DescriptionMarker(schedule.description);
    page.schedules.push_back(std::move(schedule));
  }
  return page;
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
  auto json = ParseArray(body, "pipelines");
  if (!json) return Error{json.error()};
  PipelinePage page;
  page.listed = json->size();
  for (const Json& item : *json) {
    auto problem = [&](const std::string& text) {
      page.problems.push_back(
          MakeProblem(Reason::kMalformedObject, fmt::format("{}: {}", what, text)));
    };
    if (!item.is_object()) {
      problem("a pipeline that is not an object");
      continue;
    }
    auto id = IdField(item, "id");
    auto status = StringField(item, "status");
    auto created = TimeField(item, "created_at");
    if (!id || !status || !created) {
      problem("a pipeline without id, status or created_at");
      continue;
    }
    Pipeline pipeline;
    pipeline.id = *id;
    pipeline.created = *created;
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
      problem(fmt::format("pipeline {} has an unknown status \"{}\"", *id, Shorten(s, 40)));
      continue;
    }
    if (pipeline.state != api::RunState::kRunning) {
      pipeline.finished = TimeField(item, "finished_at");
      if (!pipeline.finished) pipeline.finished = TimeField(item, "updated_at");
      if (!pipeline.finished) pipeline.finished = pipeline.created;
    }
    page.pipelines.push_back(pipeline);
  }
  return page;
}

void AddPipeline(RunHistory& history, const Pipeline& pipeline) {
  api::AddRun(history, pipeline.created, pipeline.finished, pipeline.state);
}

std::string ErrorMessage(std::string_view body) {
  Json json = Json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return {};
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
