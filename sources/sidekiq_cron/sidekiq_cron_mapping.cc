#include "sources/sidekiq_cron/sidekiq_cron_mapping.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "schedwatch/schedule.h"
#include "schedwatch/timefmt.h"
#include "sources/api_answers.h"

namespace schedwatch::sidekiq_cron {
namespace {

constexpr std::string_view kJobPrefix = "cron_job:";

bool Digits(std::string_view text, std::size_t at, std::size_t count) {
  if (at + count > text.size()) return false;
  for (std::size_t i = at; i < at + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

int Number(std::string_view text, std::size_t at, std::size_t count) {
  int value = 0;
  for (std::size_t i = at; i < at + count; ++i) value = value * 10 + (text[i] - '0');
  return value;
}

// "+0900", "-05:30", "+09:00": seconds east of UTC.
std::optional<int> Offset(std::string_view text) {
  if (text.size() != 5 && text.size() != 6) return std::nullopt;
  if (text[0] != '+' && text[0] != '-') return std::nullopt;
  std::size_t minutes = text.size() == 6 ? 4 : 3;
  if (!Digits(text, 1, 2) || !Digits(text, minutes, 2)) return std::nullopt;
  if (text.size() == 6 && text[3] != ':') return std::nullopt;
  int seconds = Number(text, 1, 2) * 3600 + Number(text, minutes, 2) * 60;
  if (seconds > 14 * 3600 || Number(text, minutes, 2) > 59) return std::nullopt;
  return text[0] == '-' ? -seconds : seconds;
}

std::optional<double> Number(const api::Json* value) {
  if (value == nullptr || !value->is_number()) return std::nullopt;
  double number = value->get<double>();
  if (!std::isfinite(number) || number < 0 || number > 1e11) return std::nullopt;
  return number;
}

// A string value within kMaxTextBytes, else nullopt.
std::optional<std::string_view> Text(const RedisValue& value) {
  if (!value.is_string() || value.text.size() > kMaxTextBytes) return std::nullopt;
  return std::string_view(value.text);
}

}  // namespace

std::string JobName(std::string_view member) {
  if (member.substr(0, kJobPrefix.size()) != kJobPrefix || member.size() == kJobPrefix.size()) {
    return {};
  }
  return std::string(member.substr(kJobPrefix.size()));
}

std::optional<std::int64_t> ParseEnqueueTime(std::string_view text) {
  // "YYYY-MM-DD HH:MM:SS <zone>"
  if (text.size() >= 20 && text[10] == ' ' && text[19] == ' ' && Digits(text, 0, 4) &&
      text[4] == '-' && Digits(text, 5, 2) && text[7] == '-' && Digits(text, 8, 2) &&
      Digits(text, 11, 2) && text[13] == ':' && Digits(text, 14, 2) && text[16] == ':' &&
      Digits(text, 17, 2)) {
    std::string_view zone = text.substr(20);
    std::optional<int> offset = zone == "UTC" ? std::optional<int>(0) : Offset(zone);
    if (!offset) return std::nullopt;
    std::string rfc(text.substr(0, 19));
    rfc[10] = 'T';
    auto local = ParseRfc3339(rfc + "Z");
    if (!local) return std::nullopt;
    return *local - *offset;
  }
  return ParseRfc3339(text);
}

SplitCron SplitZone(std::string_view cron) {
  SplitCron split;
  while (!cron.empty() && std::isspace(static_cast<unsigned char>(cron.back()))) {
    cron.remove_suffix(1);
  }
  std::size_t blank = cron.find_last_of(" \t");
  std::string_view last = blank == std::string_view::npos ? "" : cron.substr(blank + 1);
  std::string_view rest = blank == std::string_view::npos ? cron : cron.substr(0, blank);
  split.fields = std::string(cron);
  if (last.empty()) return split;
  if (auto offset = Offset(last)) {
    split.fields = std::string(rest);
    if (*offset % 3600 == 0) {
      int hours = *offset / 3600;
      // POSIX signs: Etc/GMT-9 is nine hours east.
      split.zone =
          hours == 0 ? "UTC" : fmt::format("Etc/GMT{}{}", hours > 0 ? '-' : '+', std::abs(hours));
    } else {
      split.zone = std::string(last);
    }
    return split;
  }
  // A name needs a letter; fields' month and weekday names are no zones.
  if (std::any_of(last.begin(), last.end(), [](char c) { return std::isalpha(c) != 0; }) &&
      (last == "Z" || FindZone(last) != nullptr)) {
    split.fields = std::string(rest);
    split.zone = last == "Z" ? "UTC" : std::string(last);
  }
  return split;
}

std::optional<Result<Marker>> JobMarker(std::string_view description, std::string_view name) {
  if (auto marker = DescriptionMarker(description)) return marker;
  return DescriptionMarker(name);
}

Result<CronJob> ReadJob(std::string_view name, const RedisValue& hash, const RedisValue& history) {
  if (hash.is_error()) return Error{"HGETALL answered an error: " + hash.text.substr(0, 200)};
  if (!hash.is_array() || hash.elements.size() % 2 != 0) return Error{"its hash is no hash"};
  if (hash.elements.empty()) return Error{"its hash is gone (deleted while read?)"};
  CronJob job;
  job.name = std::string(name);
  job.status = "enabled";  // Sidekiq-cron's default when the hash has no status
  std::string message;
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    const RedisValue& key = hash.elements[i];
    const RedisValue& value = hash.elements[i + 1];
    if (!key.is_string()) return Error{"its hash has a field that is no string"};
    const std::string& field = key.text;
    std::string* into = field == "cron"          ? &job.cron
                        : field == "description" ? &job.description
                        : field == "status"      ? &job.status
                        : field == "klass"       ? &job.klass
                                                 : nullptr;
    if (into == nullptr && field != "message" && field != "last_enqueue_time") continue;
    auto text = Text(value);
    if (!text)
      return Error{fmt::format("its {} is no string of at most {} bytes", field, kMaxTextBytes)};
    if (into != nullptr) {
      *into = std::string(*text);
    } else if (field == "message") {
      message = std::string(*text);
    } else if (!text->empty()) {
      job.last_enqueue_time = ParseEnqueueTime(*text);
    }
  }
  if (job.cron.empty()) return Error{"it has no cron"};
  if (!message.empty()) {
    auto parsed = api::ParseBounded(message);
    if (parsed && parsed->is_object()) {
      job.queue = api::StringField(*parsed, "queue").value_or("");
    }
  }
  if (history.is_array()) {
    for (const RedisValue& entry : history.elements) {
      if (job.history.size() >= kHistoryRead) break;
      auto text = Text(entry);
      if (!text) continue;
      auto parsed = api::ParseBounded(*text);
      if (!parsed || !parsed->is_object()) continue;
      auto jid = api::StringField(*parsed, "jid");
      auto enqueued = api::StringField(*parsed, "enqueued");
      if (!jid || jid->empty() || jid->size() > 64 || !enqueued) continue;
      if (auto time = ParseEnqueueTime(*enqueued)) job.history.push_back({*jid, *time});
    }
  }
  job.marker = JobMarker(job.description, job.name);
  return job;
}

LiveObject MakeLiveObject(const CronJob& job, std::string_view role, std::string_view spec_version,
                          const std::string& local_zone) {
  SplitCron split = SplitZone(job.cron);
  LiveObject object(job.name, role, split.fields, split.zone.empty() ? local_zone : split.zone,
                    spec_version, job.enabled());
  if (!job.enabled()) object.set_state(job.status.substr(0, 40));
  return object;
}

std::optional<std::pair<std::string, std::int64_t>> FailedEntry(std::string_view member) {
  auto parsed = api::ParseBounded(member);
  if (!parsed || !parsed->is_object()) return std::nullopt;
  auto jid = api::StringField(*parsed, "jid");
  if (!jid || jid->empty() || jid->size() > 64) return std::nullopt;
  auto failed = Number(api::Field(*parsed, "failed_at"));
  if (auto retried = Number(api::Field(*parsed, "retried_at")); retried && failed) {
    failed = std::max(*failed, *retried);
  }
  if (!failed) return std::nullopt;
  return std::make_pair(*jid, static_cast<std::int64_t>(*failed));
}

std::optional<std::pair<std::string, std::int64_t>> WorkEntry(std::string_view value) {
  auto parsed = api::ParseBounded(value);
  if (!parsed || !parsed->is_object()) return std::nullopt;
  auto run_at = Number(api::Field(*parsed, "run_at"));
  const api::Json* payload = api::Field(*parsed, "payload");
  if (!run_at || payload == nullptr) return std::nullopt;
  std::optional<std::string> jid;
  if (payload->is_string()) {  // Sidekiq 6: the payload is the job's JSON, as a string
    auto inner = api::ParseBounded(payload->get_ref<const std::string&>());
    if (inner && inner->is_object()) jid = api::StringField(*inner, "jid");
  } else if (payload->is_object()) {
    jid = api::StringField(*payload, "jid");
  }
  if (!jid || jid->empty() || jid->size() > 64) return std::nullopt;
  return std::make_pair(*jid, static_cast<std::int64_t>(*run_at));
}

std::optional<std::string> PayloadJid(std::string_view payload) {
  auto parsed = api::ParseBounded(payload);
  if (!parsed || !parsed->is_object()) return std::nullopt;
  auto jid = api::StringField(*parsed, "jid");
  if (!jid || jid->empty() || jid->size() > 64) return std::nullopt;
  return jid;
}

RunHistory JobHistory(const CronJob& job, const JidStates& states, std::int64_t now,
                      std::int64_t settle) {
  RunHistory history;
  bool last_seen = false;
  for (const Enqueue& enqueue : job.history) {
    last_seen |= job.last_enqueue_time == enqueue.enqueued;
    if (auto failed = states.failed.find(enqueue.jid); failed != states.failed.end()) {
      api::AddRun(history, enqueue.enqueued, std::max(failed->second, enqueue.enqueued),
                  api::RunState::kFailed);
    } else if (auto running = states.running.find(enqueue.jid); running != states.running.end()) {
      api::AddRun(history, enqueue.enqueued, std::nullopt, api::RunState::kRunning);
    } else if (states.queued.count(enqueue.jid) > 0 || now - enqueue.enqueued < settle ||
               states.unsure_queues.count(job.queue) > 0) {
      api::AddRun(history, enqueue.enqueued, std::nullopt, api::RunState::kRunning);
    } else {
      api::AddRun(history, enqueue.enqueued, enqueue.enqueued, api::RunState::kSucceeded);
    }
  }
  if (job.last_enqueue_time && !last_seen) {
    api::AddRun(history, *job.last_enqueue_time, std::nullopt, api::RunState::kEnded);
  }
  return history;
}

}  // namespace schedwatch::sidekiq_cron
