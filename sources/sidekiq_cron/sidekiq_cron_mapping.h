// Pure mapping of what Sidekiq-cron 1.8 and Sidekiq 6.4 keep in Redis to schedwatch's live
// objects and run history. No I/O, no clock: the source (sidekiq_cron_source.h) reads the keys,
// these functions read the replies.
//
//   cron_jobs                  set of "cron_job:NAME" (the members carry no namespace)
//   cron_job:NAME              hash: name cron description klass message status
//                              last_enqueue_time ... (Job#to_hash, written by Job#save)
//   cron_job:NAME:jid_history  list, newest first: {"jid":J,"enqueued":"2026-12-05 01:00:00 +0000"}
//   cron_job:NAME:enqueued     sorted set of fire times enqueued in the last 24 h (not read)
//   retry, dead                sorted sets of job payloads (JSON with "jid", "failed_at")
//   processes                  set of process identities; IDENTITY:workers hash: thread ->
//                              {"queue":..,"payload":"<job JSON>","run_at":<unix>}
// With a namespace (redis-namespace) every key above starts with "NAMESPACE:".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/marker.h"
#include "sources/sidekiq_cron/sidekiq_cron_redis.h"

namespace schedwatch::sidekiq_cron {

// The longest name, cron, description or status kept; a longer one is a malformed job.
inline constexpr std::size_t kMaxTextBytes = 4096;
// jid history entries read per job: Sidekiq-cron keeps 10 unless cron_history_size says more.
inline constexpr std::size_t kHistoryRead = 20;

struct Enqueue {
  std::string jid;
  std::int64_t enqueued = 0;
};

struct CronJob {
  std::string name, cron, description, status, klass, queue;
  std::optional<std::int64_t> last_enqueue_time;
  std::vector<Enqueue> history;          // newest first
  std::optional<Result<Marker>> marker;  // from the description, else the name
  bool enabled() const { return status == "enabled"; }
};

// "cron_job:NAME" → NAME; empty when the member is no job key.
std::string JobName(std::string_view member);

// One job from its HGETALL and LRANGE jid_history replies; an Error (why, for a
// malformed_object problem) when the hash is no job Sidekiq-cron wrote. An empty hash (the job
// deleted between the two reads) is an Error too. Unreadable history entries are skipped.
Result<CronJob> ReadJob(std::string_view name, const RedisValue& hash, const RedisValue& history);

// Sidekiq-cron's times: "2026-12-05 01:00:00 +0000" (LAST_ENQUEUE_TIME_FORMAT), a Ruby Time's
// to_s ("2026-12-05 01:00:00 UTC"), or RFC 3339.
std::optional<std::int64_t> ParseEnqueueTime(std::string_view text);

// The cron's fields and its time zone suffix ("0 3 * * * Europe/Berlin", "0 3 * * * +09:00"),
// as fugit reads them. `zone` is the IANA name (an offset of whole hours is Etc/GMT∓H), the
// suffix as written when it is no zone schedwatch knows, empty when there is none.
struct SplitCron {
  std::string fields, zone;
};
SplitCron SplitZone(std::string_view cron);

// The marker in a description ("Nightly [schedwatch: role=R spec_version=2]"), else in the name.
std::optional<Result<Marker>> JobMarker(std::string_view description, std::string_view name);

// The live object of a marked job; a cron without a zone suffix runs in `local_zone` (the
// Sidekiq processes' TZ; empty: not compared).
LiveObject MakeLiveObject(const CronJob& job, std::string_view role, std::string_view spec_version,
                          const std::string& local_zone);

// What Sidekiq holds of the jobs' jids now.
struct JidStates {
  std::map<std::string, std::int64_t> failed;   // jid → when it failed (retry or dead set)
  std::map<std::string, std::int64_t> running;  // jid → when a process started it (work sets)
  std::set<std::string> queued;                 // jids waiting in their queue
  std::set<std::string> unsure_queues;          // queues longer than was read
};
// The jid of a job payload waiting in a queue (`queue:NAME` list).
std::optional<std::string> PayloadJid(std::string_view payload);
// A retry or dead set member (a job payload): its jid and when it failed last.
std::optional<std::pair<std::string, std::int64_t>> FailedEntry(std::string_view member);
// A `IDENTITY:workers` hash value: its jid and run_at.
std::optional<std::pair<std::string, std::int64_t>> WorkEntry(std::string_view value);

// The job's runs: each jid of its history failed (in the retry or dead set), started and not
// done (in a work set, or still in its queue), or, absent from all, succeeded at its enqueue
// time: Sidekiq keeps no trace of a success. A jid enqueued within `settle` seconds of now
// (Sidekiq writes work sets every 5 s), or whose queue was too long to read whole, that is in
// none of them is not yet a success. last_enqueue_time without its jid: a start only.
RunHistory JobHistory(const CronJob& job, const JidStates& states, std::int64_t now,
                      std::int64_t settle = 10);

}  // namespace schedwatch::sidekiq_cron
