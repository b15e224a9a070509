// Counts every attempt an API source sends, by outcome, and the rate-limit quota its answers
// said is left: schedwatch_source_requests_total{outcome} and
// schedwatch_source_rate_limit_remaining. Shared by the sources that call a rate-limited API.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "schedwatch/platform/api_client.h"
#include "sources/source.h"

namespace schedwatch {

// "200", "201", "304", "401", "403", "404", "422", "429", "5xx" or "other": a metric label of
// few values.
std::string RequestOutcome(long status);

class RequestCounter {
 public:
  // `remaining_header`: the answer header holding the quota left ("x-ratelimit-remaining").
  explicit RequestCounter(std::string remaining_header);

  // `send`, counting each attempt; the counts outlive this object while the transport lives.
  platform::HttpTransport Counting(platform::HttpTransport send) const;
  // Thread-safe.
  SourceRequestCounts Usage() const;
  // A reloaded source goes on counting where its predecessor stopped.
  void Inherit(const RequestCounter& previous);

 private:
  struct Counts {
    mutable std::mutex mutex;
    std::map<std::string, std::uint64_t> by_outcome;
    std::optional<std::int64_t> remaining;
  };
  std::string remaining_header_;
  std::shared_ptr<Counts> counts_;
};

}  // namespace schedwatch
