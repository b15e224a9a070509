// rate_limit of the web configuration: exporter-toolkit's token bucket (one bucket for the
// server, `burst` tokens at first and at most, one more every `interval`). What it is charged
// with is decided by the server (exporter/http/web.cc): never a scrape that passed authentication.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace schedwatch {

struct ExpositionForm;

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  RateLimiter(std::chrono::nanoseconds interval, unsigned burst);

  // Takes a token at `now`: nullopt when one was there, else the whole seconds (at least 1)
  // until one will be, for Retry-After; a refusal is counted.
  std::optional<std::chrono::seconds> Take(Clock::time_point now);

  std::uint64_t limited() const;

 private:
  const std::chrono::nanoseconds interval_, depth_;  // depth_: burst × interval
  mutable std::mutex mutex_;
  // When the bucket would be full again (the generic cell rate algorithm's "theoretical
  // arrival time"): a request is let through when, with its interval added, that lies at most
  // depth_ ahead of now.
  Clock::time_point full_at_ = Clock::time_point::min();
  std::uint64_t limited_ = 0;
};

// schedwatch_exporter_http_requests_limited_total, rendered at each scrape.
void RenderRateLimitMetrics(std::uint64_t limited, const ExpositionForm& form, std::string& out);

}  // namespace schedwatch
