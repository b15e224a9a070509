// RFC 3339 timestamps <-> Unix seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace date {
class time_zone;
}

namespace schedwatch {

// "2024-05-01T00:30:00Z", "2024-05-01T02:30:00+02:00", "2024-05-01T00:30:00.123Z" (fractions are
// truncated), also with a space for the 'T'. nullopt when it is not one.
std::optional<std::int64_t> ParseRfc3339(std::string_view text);

// "2026-11-30T21:00:00+09:00" in `zone` (UTC when null: "2026-11-30T12:00:00Z"). Any value is
// safe: times outside years 0000-9999 are shown as the nearest of those bounds.
std::string FormatRfc3339(std::int64_t unix_seconds, const date::time_zone* zone = nullptr);

}  // namespace schedwatch
