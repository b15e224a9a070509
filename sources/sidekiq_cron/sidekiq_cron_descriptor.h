// The `sidekiq_cron` source type as the spec sees it: Sidekiq-cron's jobs in one Redis database,
// decoded without I/O.
#pragma once

#include <string>
#include <string_view>

#include "schedwatch/result.h"
#include "schedwatch/source_type.h"

namespace schedwatch::sidekiq_cron {

struct SidekiqCronSettings : SourceSettings {
  std::string url = "redis://127.0.0.1:6379/0";  // redis://host:port/db or unix:/path
  std::string password_file;  // at most one of password_file and password_env; neither: none
  std::string password_env;
  std::string namespace_;  // redis-namespace's prefix ("myapp" for keys "myapp:cron_jobs")
  // The zone of the Sidekiq processes (their TZ), in which a cron without a zone suffix fires;
  // empty: such a cron's zone is not compared with the job's.
  std::string local_timezone;
};

// Where Redis is: `redis://[host][:port][/db]`, `unix:/path` or `unix:///path` (`?db=N`).
// Credentials in the URL are refused (the password comes from a file or the environment).
struct RedisAddress {
  std::string host;  // empty for a socket
  int port = 6379;
  std::string socket;
  int db = 0;
};
// Why `url` is no address schedwatch can use; empty when it is one.
std::string CheckRedisUrl(std::string_view url);
Result<RedisAddress> ParseRedisUrl(std::string_view url);

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::sidekiq_cron
