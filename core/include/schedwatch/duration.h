// Prometheus-style durations: "90s", "5m", "1h30m", "2d", "1w". Whole seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch {

// Units y, w, d, h, m, s (and ms, rounded up to a second) in decreasing order, each at most
// once. Negative or empty durations are errors.
Result<std::int64_t> ParseDuration(std::string_view text);
// The same, in milliseconds (for flags such as --refresh.confirm-delay=100ms).
Result<std::int64_t> ParseDurationMilliseconds(std::string_view text);

// The shortest Prometheus form: 5400 -> "1h30m", 0 -> "0s".
std::string FormatDuration(std::int64_t seconds);

}  // namespace schedwatch
