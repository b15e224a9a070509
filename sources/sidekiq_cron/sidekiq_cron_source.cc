#include "sources/sidekiq_cron/sidekiq_cron_source.h"

#include <fmt/format.h>

#include <map>

#include "sources/problems.h"

namespace schedwatch {
namespace {

using sidekiq_cron::RedisConnection;
using sidekiq_cron::RedisValue;

// Beyond these the data is suspect, or too much to hold: the read fails (jobs) or says what it
// left out (failed jids, processes).
constexpr std::size_t kMaxJobs = 200'000;
constexpr std::size_t kJobsPerPipeline = 1000;
constexpr long kFailedRead = 20'000;  // of the retry set, and the newest of the dead set
constexpr std::size_t kMaxProcesses = 1000;
constexpr long kQueueRead = 1000;  // entries of a queue looked at for waiting jids

// A reply that should be an array: an error reply is Redis refusing (NOAUTH, WRONGTYPE).
Result<const RedisValue*> Array(const RedisValue& reply, std::string_view what) {
  if (reply.is_error()) return Error{fmt::format("{}: {}", what, reply.text.substr(0, 200))};
  if (!reply.is_array()) return Error{fmt::format("{}: the answer is no list", what)};
  return &reply;
}

}  // namespace

Result<std::unique_ptr<SidekiqCronSource>> SidekiqCronSource::Create(const SourceOptions& options) {
  const auto* settings = options.spec->SettingsAs<sidekiq_cron::SidekiqCronSettings>();
  if (settings == nullptr) return Error{"the settings are not a sidekiq_cron source's"};
  auto address = sidekiq_cron::ParseRedisUrl(settings->url);
  if (!address) return Error{address.error()};
  std::unique_ptr<SidekiqCronSource> source(new SidekiqCronSource());
  source->address_ = *address;
  source->namespace_ = settings->namespace_;
  source->local_zone_ = settings->local_timezone;
  source->timeout_ = settings->timeout.value_or(std::chrono::seconds(10));
  source->password_ = TokenSource(settings->password_file, settings->password_env);
  for (const JobSpec* job : options.jobs) source->jobs_.push_back(*job);
  return source;
}

Result<std::unique_ptr<Source>> MakeSidekiqCronSource(const SourceOptions& options) {
  auto source = SidekiqCronSource::Create(options);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Source>(std::move(*source));
}

std::string SidekiqCronSource::Key(std::string_view key) const {
  return namespace_.empty() ? std::string(key) : namespace_ + ":" + std::string(key);
}

Result<std::unique_ptr<RedisConnection>> SidekiqCronSource::Connect() {
  auto password = password_.Load();
  if (!password) return Error{password.error()};
  return RedisConnection::Open(address_, *password, timeout_);
}

Result<std::vector<sidekiq_cron::CronJob>> SidekiqCronSource::Jobs(
    RedisConnection& redis, std::vector<SourceProblem>& problems) {
  auto set = redis.Pipeline({{"SMEMBERS", Key("cron_jobs")}});
  if (!set) return Error{set.error()};
  auto members = Array(set->front(), "SMEMBERS " + Key("cron_jobs"));
  if (!members) return Error{members.error()};
  if ((*members)->elements.size() > kMaxJobs) {
    return Error{fmt::format("{} holds {} members, more than the {} read", Key("cron_jobs"),
                             (*members)->elements.size(), kMaxJobs)};
  }
  std::vector<std::string> names;
  ProblemSink unreadable;
  for (const RedisValue& member : (*members)->elements) {
    std::string name = member.is_string() ? sidekiq_cron::JobName(member.text) : "";
    if (name.empty()) {
      unreadable.Add(Reason::kMalformedObject, [&] {
        return fmt::format("{} holds a member that is no cron_job:NAME key", Key("cron_jobs"));
      });
      continue;
    }
    names.push_back(std::move(name));
  }
  std::vector<sidekiq_cron::CronJob> jobs;
  for (std::size_t first = 0; first < names.size(); first += kJobsPerPipeline) {
    std::size_t end = std::min(names.size(), first + kJobsPerPipeline);
    std::vector<std::vector<std::string>> commands;
    for (std::size_t i = first; i < end; ++i) {
      std::string key = Key("cron_job:" + names[i]);
      commands.push_back({"HGETALL", key});
      commands.push_back(
          {"LRANGE", key + ":jid_history", "0", std::to_string(sidekiq_cron::kHistoryRead - 1)});
    }
    auto replies = redis.Pipeline(commands);
    if (!replies) return Error{replies.error()};
    for (std::size_t i = first; i < end; ++i) {
      const RedisValue& hash = (*replies)[2 * (i - first)];
      // Deleted since SMEMBERS (a reload's destroy_removed_jobs): gone, as Job.all skips it.
      if (hash.is_array() && hash.elements.empty()) continue;
      auto job = sidekiq_cron::ReadJob(names[i], hash, (*replies)[2 * (i - first) + 1]);
      if (!job) {
        unreadable.Add(Reason::kMalformedObject, [&] {
          return fmt::format("cron job {}: {}", names[i].substr(0, 200), job.error());
        });
        continue;
      }
      jobs.push_back(std::move(*job));
    }
  }
  unreadable.AppendTo(problems);
  return jobs;
}

Result<sidekiq_cron::JidStates> SidekiqCronSource::States(RedisConnection& redis,
                                                          const std::set<std::string>& queues,
                                                          std::vector<SourceProblem>& problems) {
  const std::string last = std::to_string(kFailedRead - 1);
  auto replies = redis.Pipeline({{"ZCARD", Key("retry")},
                                 {"ZRANGE", Key("retry"), "0", last},
                                 {"ZREVRANGE", Key("dead"), "0", last},
                                 {"SMEMBERS", Key("processes")}});
  if (!replies) return Error{replies.error()};
  sidekiq_cron::JidStates states;
  for (std::size_t i : {1, 2}) {
    auto set = Array((*replies)[i], i == 1 ? "ZRANGE retry" : "ZREVRANGE dead");
    if (!set) return Error{set.error()};
    for (const RedisValue& member : (*set)->elements) {
      if (!member.is_string()) continue;
      if (auto entry = sidekiq_cron::FailedEntry(member.text)) {
        auto& when = states.failed[entry->first];
        when = std::max(when, entry->second);
      }
    }
  }
  if ((*replies)[0].integer > kFailedRead) {
    problems.push_back(
        MakeProblem(Reason::kHistoryFailed,
                    fmt::format("the retry set holds {} jobs; the {} due first were looked at",
                                (*replies)[0].integer, kFailedRead)));
  }
  auto processes = Array((*replies)[3], "SMEMBERS processes");
  if (!processes) return Error{processes.error()};
  std::vector<std::vector<std::string>> commands;
  for (const std::string& queue : queues) {
    commands.push_back({"LLEN", Key("queue:" + queue)});
    commands.push_back({"LRANGE", Key("queue:" + queue), "0", std::to_string(kQueueRead - 1)});
  }
  const std::size_t queue_commands = commands.size();
  for (const RedisValue& process : (*processes)->elements) {
    if (!process.is_string() || process.text.size() > 1024) continue;
    if (commands.size() == queue_commands + kMaxProcesses) break;
    commands.push_back({"HGETALL", Key(process.text + ":workers")});
  }
  if (commands.empty()) return states;
  auto more = redis.Pipeline(commands);
  if (!more) return Error{more.error()};
  auto queue = queues.begin();
  for (std::size_t i = 0; i < queue_commands; i += 2, ++queue) {
    if ((*more)[i].integer > kQueueRead) states.unsure_queues.insert(*queue);
    if (!(*more)[i + 1].is_array()) continue;
    for (const RedisValue& payload : (*more)[i + 1].elements) {
      if (!payload.is_string()) continue;
      if (auto jid = sidekiq_cron::PayloadJid(payload.text)) states.queued.insert(*jid);
    }
  }
  for (std::size_t i = queue_commands; i < more->size(); ++i) {
    const RedisValue& hash = (*more)[i];
    if (!hash.is_array()) continue;
    for (std::size_t i = 1; i < hash.elements.size(); i += 2) {
      if (!hash.elements[i].is_string()) continue;
      if (auto entry = sidekiq_cron::WorkEntry(hash.elements[i].text)) {
        states.running.insert(*entry);
      }
    }
  }
  return states;
}

Result<SourceSnapshot> SidekiqCronSource::List(const ListContext& context) {
  auto redis = Connect();
  if (!redis) return Error{redis.error()};
  SourceSnapshot snapshot;
  auto jobs = Jobs(**redis, snapshot.problems);
  if (!jobs) {
    bytes_read_ += (*redis)->bytes_read();
    return Error{jobs.error()};
  }
  std::map<std::string, std::size_t, std::less<>> job_by_role;
  for (std::size_t i = 0; i < jobs_.size(); ++i) job_by_role[jobs_[i].role] = i;
  std::vector<const sidekiq_cron::CronJob*> watched;
  std::set<std::string> queues;
  for (const auto& job : *jobs) {
    if (!job.marker) continue;  // not schedwatch's
    if (!*job.marker) {
      snapshot.problems.push_back(MakeProblem(
          Reason::kMalformedMarker,
          fmt::format("cron job {}: {}", job.name.substr(0, 200), job.marker->error())));
      continue;
    }
    const Marker& marker = **job.marker;
    snapshot.objects.push_back(
        sidekiq_cron::MakeLiveObject(job, marker.role, marker.spec_version, local_zone_));
    if (job_by_role.count(marker.role) > 0) {
      watched.push_back(&job);
      if (!job.queue.empty() && job.queue.size() <= 200 && queues.size() < 100) {
        queues.insert(job.queue);
      }
    }
  }
  if (!watched.empty()) {
    auto states = States(**redis, queues, snapshot.problems);
    if (!states) {
      snapshot.history_error = states.error();
    } else {
      for (const auto* job : watched) {
        snapshot.history[(*job->marker)->role].Merge(
            sidekiq_cron::JobHistory(*job, *states, context.now));
      }
    }
  }
  bytes_read_ += (*redis)->bytes_read();
  snapshot.problems = CapProblems(std::move(snapshot.problems));
  return snapshot;
}

}  // namespace schedwatch
