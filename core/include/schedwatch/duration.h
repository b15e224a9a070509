// Prometheus-style durations: "90s", "5m", "1h30m", "2d", "1w". Whole seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch {

// The longest duration of the spec (thresholds: start_grace, max_runtime, alert_for,
// stale_after): ten years. Schedules may fire years apart (Feb 29 yearly: four years, eight
// across 2100), so thresholds of years are real; ten years is longer than any schedule's period,
// yet keeps everything derived (2 x period + max_runtime, in milliseconds, now +- a duration)
// far from overflowing and within what Prometheus accepts as `for:` (292 years).
inline constexpr std::int64_t kMaxDurationSeconds = 10LL * 365 * 86400;
// The longest wait of the exporter's own loop (refresh interval, source timeouts, confirm
// delay): a day. Longer is a typo, not a setting, and would leave the watcher blind.
inline constexpr std::int64_t kMaxWaitSeconds = 86400;

// Units y, w, d, h, m, s (and ms, rounded up to a second) in decreasing order, each at most
// once. Negative or empty durations, and those longer than `max_seconds`, are errors.
Result<std::int64_t> ParseDuration(std::string_view text,
                                   std::int64_t max_seconds = kMaxDurationSeconds);
// The same, in milliseconds (for flags such as --refresh.confirm-delay=100ms).
Result<std::int64_t> ParseDurationMilliseconds(std::string_view text,
                                               std::int64_t max_seconds = kMaxDurationSeconds);

// The shortest Prometheus form: 5400 -> "1h30m", 0 -> "0s".
std::string FormatDuration(std::int64_t seconds);

}  // namespace schedwatch
