// --web.config.file in the exporter-toolkit format (TLS, basic auth users, headers, rate_limit).
#include <chrono>
#include <string>

#include "exporter/http/web_config.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto config = schedwatch::ParseWebConfig(schedwatch::fuzz::AsText(data, size), "/fuzz/web.yml");
  if (!config) return 0;
  // A bucket the server can run: an interval within a day, at least one token, no overflow.
  if (config->rate_limit) {
    const auto& limit = *config->rate_limit;
    if (limit.interval.count() <= 0 || limit.interval > std::chrono::hours(24) || limit.burst < 1 ||
        limit.burst > 100000) {
      __builtin_trap();
    }
  }
  for (const auto& [user, hash] : config->basic_auth_users) {
    // A parsed user table must be usable: a wrong password never matches. Only the cheapest
    // cost is checked here: bcrypt at cost 31 takes days on purpose, and says nothing new.
    if (hash.compare(3, 4, "$04$") != 0) continue;
    if (schedwatch::VerifyBasicAuthPassword(hash, "\x01not-the-password")) __builtin_trap();
  }
  return 0;
}
