#include "schedwatch/duration.h"

#include <fmt/format.h>

#include <cctype>
#include <limits>

namespace schedwatch {
namespace {

struct Unit {
  std::string_view name;
  std::int64_t milliseconds;
};

// Longest names first so that "ms" is not read as "m".
constexpr Unit kUnits[] = {{"y", 365LL * 86400 * 1000},
                           {"w", 7LL * 86400 * 1000},
                           {"d", 86400LL * 1000},
                           {"h", 3600LL * 1000},
                           {"ms", 1},
                           {"m", 60LL * 1000},
                           {"s", 1000}};
constexpr int UnitRank(std::string_view name) {
  // Order in which units must appear: y w d h m s ms.
  return name == "y"   ? 0
         : name == "w" ? 1
         : name == "d" ? 2
         : name == "h" ? 3
         : name == "m" ? 4
         : name == "s" ? 5
                       : 6;
}

// "10y", "1d": a maximum as people write it.
std::string FormatMaximum(std::int64_t seconds) {
  constexpr std::int64_t kYear = 365 * 86400;
  if (seconds >= kYear && seconds % kYear == 0) return fmt::format("{}y", seconds / kYear);
  return FormatDuration(seconds);
}

}  // namespace

Result<std::int64_t> ParseDuration(std::string_view text, std::int64_t max_seconds) {
  auto milliseconds = ParseDurationMilliseconds(text, max_seconds);
  if (!milliseconds) return milliseconds;
  return (*milliseconds + 999) / 1000;
}

Result<std::int64_t> ParseDurationMilliseconds(std::string_view text, std::int64_t max_seconds) {
  if (text.empty()) return Error{"empty duration"};
  if (text.front() == '-') return Error{fmt::format("duration \"{}\" is negative", text)};
  std::int64_t total_ms = 0;
  int last_rank = -1;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      return Error{fmt::format("not a valid duration \"{}\": expected a number at \"{}\"", text,
                               text.substr(i))};
    }
    std::int64_t number = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (number > std::numeric_limits<std::int64_t>::max() / 10 / 1000) {
        return Error{fmt::format("duration \"{}\" is too large", text)};
      }
      number = number * 10 + (text[i] - '0');
      ++i;
    }
    const Unit* unit = nullptr;
    for (const Unit& candidate : kUnits) {
      if (text.substr(i, candidate.name.size()) == candidate.name) {
        unit = &candidate;
        break;
      }
    }
    if (unit == nullptr) {
      return Error{fmt::format(
          "not a valid duration \"{}\": unit missing or unknown (use y, w, d, h, m, s, ms)", text)};
    }
    int rank = UnitRank(unit->name);
    if (rank <= last_rank) {
      return Error{
          fmt::format("not a valid duration \"{}\": units must go from largest to "
                      "smallest, each once",
                      text)};
    }
    last_rank = rank;
    i += unit->name.size();
    if (number > (std::numeric_limits<std::int64_t>::max() - total_ms) / unit->milliseconds) {
      return Error{fmt::format("duration \"{}\" is too large", text)};
    }
    total_ms += number * unit->milliseconds;
  }
  if (total_ms > max_seconds * 1000) {
    return Error{fmt::format("duration \"{}\" is longer than the maximum of {}", text,
                             FormatMaximum(max_seconds))};
  }
  return total_ms;
}

std::string FormatDuration(std::int64_t seconds) {
  if (seconds <= 0) return "0s";
  std::string out;
  for (auto [unit, size] : {std::pair{"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}}) {
    if (seconds >= size) {
      out += fmt::format("{}{}", seconds / size, unit);
      seconds %= size;
    }
  }
  return out;
}

}  // namespace schedwatch
