// The `sidekiq_cron` source: Sidekiq-cron's cron jobs in Redis, the marker in their
// descriptions, and what Sidekiq holds of the jids they enqueued.
//
//   sources:
//     app:
//       type: sidekiq_cron
//       url: redis://127.0.0.1:6379/0      # or unix:/run/redis/redis.sock (rediss://: no TLS)
//       password_file: /etc/schedwatch/redis-password   # or password_env: REDIS_PASSWORD
//       namespace: myapp                   # redis-namespace's prefix, when the app uses one
//       local_timezone: Europe/Berlin      # the Sidekiq processes' TZ, for crons without a zone
//   jobs:
//     - {role: nightly, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin}
//
// Per read, on one connection, pipelined: SMEMBERS cron_jobs; per job HGETALL and LRANGE of its
// jid history; the retry set, the newest of the dead set, the work set of every process, and the
// queues of the watched jobs (their first 1,000 entries).
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sources/sidekiq_cron/sidekiq_cron_descriptor.h"
#include "sources/sidekiq_cron/sidekiq_cron_mapping.h"
#include "sources/sidekiq_cron/sidekiq_cron_redis.h"
#include "sources/source.h"
#include "sources/token.h"

namespace schedwatch {

class SidekiqCronSource : public Source {
 public:
  static Result<std::unique_ptr<SidekiqCronSource>> Create(const SourceOptions& options);

  Result<SourceSnapshot> List(const ListContext& context) override;

  // Every job in Redis, read (for discover too). `problems` gets the unreadable ones.
  Result<std::vector<sidekiq_cron::CronJob>> Jobs(sidekiq_cron::RedisConnection& redis,
                                                  std::vector<SourceProblem>& problems);
  // What Sidekiq holds of jids now: its retry, dead and work sets.
  Result<sidekiq_cron::JidStates> States(sidekiq_cron::RedisConnection& redis,
                                         const std::set<std::string>& queues,
                                         std::vector<SourceProblem>& problems);
  Result<std::unique_ptr<sidekiq_cron::RedisConnection>> Connect();
  // "myapp:cron_jobs", or "cron_jobs" without a namespace.
  std::string Key(std::string_view key) const;
  const std::string& local_zone() const { return local_zone_; }
  // RESP bytes read from Redis since the source was made.
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  SidekiqCronSource() = default;

  sidekiq_cron::RedisAddress address_;
  std::string namespace_;
  std::string local_zone_;
  std::chrono::milliseconds timeout_{10000};
  TokenSource password_{"", ""};
  std::vector<JobSpec> jobs_;  // copies: a slow read may outlive a reloaded spec
  std::uint64_t bytes_read_ = 0;
};

Result<std::unique_ptr<Source>> MakeSidekiqCronSource(const SourceOptions& options);

}  // namespace schedwatch
