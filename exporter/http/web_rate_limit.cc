#include "exporter/http/web_rate_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "exporter/exposition/exposition.h"
#include "schedwatch/metrics.h"

namespace schedwatch {

RateLimiter::RateLimiter(std::chrono::nanoseconds interval, unsigned burst)
    : interval_(interval), depth_(interval * burst) {}

std::optional<std::chrono::seconds> RateLimiter::Take(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  Clock::time_point after = std::max(full_at_, now) + interval_;
  if (after - now <= depth_) {
    full_at_ = after;
    return std::nullopt;
  }
  ++limited_;
  // The next token comes when `after` is back within depth_ of the clock.
  auto wait = after - now - depth_;
  auto seconds = std::chrono::ceil<std::chrono::seconds>(wait);
  return std::max(seconds, std::chrono::seconds(1));
}

std::uint64_t RateLimiter::limited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limited_;
}

void RenderRateLimitMetrics(std::uint64_t limited, const ExpositionForm& form, std::string& out) {
  const metrics::Metric& metric = metrics::kHttpRequestsLimited;
  AppendHeader(out, metric, form);
  fmt::format_to(std::back_inserter(out), "{} {}\n", metric.name, limited);
  if (form.open_metrics) {
    fmt::format_to(std::back_inserter(out), "{} {}\n", CreatedName(metric), form.counting_since);
  }
}

}  // namespace schedwatch
