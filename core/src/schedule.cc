// Cron expressions (Debian cron, Kubernetes, GitHub Actions and GitLab dialects) and their fire
// times in a time zone.
//
// Wall-clock times are handled as "local minutes": minutes since 1970-01-01 00:00 on the zone's
// wall clock. CronCalendar searches local minutes with the bitsets: a non-matching day or month
// is skipped whole, so a search costs a few operations per month it crosses, never one per
// minute. Evaluator walks the zone's offset intervals (date::sys_info): inside one interval the
// wall clock is UTC plus a constant offset, so a fire time is a matching local minute minus that
// offset. The DST policy only changes what happens at the start of an interval (see DstPolicy).
#include "schedwatch/schedule.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "calendar_schedule.h"
#include "civil.h"
#include "schedwatch/duration.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kMinutesPerDay = 1440;
constexpr int kLastTimeOfDay = 1439;  // 23:59
constexpr std::int64_t kSecondsPerDay = 86400;
// The Gregorian calendar repeats every 400 years (146097 days, a whole number of weeks): a day
// pattern that matches at all matches within any window that long.
constexpr std::int64_t kCycleDays = 146097;
constexpr std::int64_t kSearchMinutes = (kCycleDays + 1) * kMinutesPerDay;
// Zone walks give up one cycle plus a year past their start (a schedule whose only matching
// wall-clock times DST always skips never fires).
constexpr std::int64_t kHorizonSeconds = (kCycleDays + 366) * kSecondsPerDay;
// Times outside years 1-9999 are not evaluated.
constexpr std::int64_t kMinTime = -62135596800;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxTime = 253402300799;  // 9999-12-31T23:59:59Z
// Vixie cron (cron.c) treats a forward jump of 3 hours or more, or a backward jump of more than
// 3 hours, as a clock correction rather than DST: then it simply follows the new wall clock.
constexpr std::int64_t kVixieMaxJumpSeconds = 3 * 3600;

constexpr std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return -FloorDiv(-a, b); }

struct CivilDate {
  std::int64_t year;
  int month;  // 1-12
  int day;    // 1-31
};

// Howard Hinnant's civil-from-days and days-from-civil (proleptic Gregorian, day 0 = 1970-01-01).
CivilDate CivilFromDays(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2), month, day};
}

int WeekdayOfDay(std::int64_t days) {  // 0 = Sunday; 1970-01-01 was a Thursday
  return static_cast<int>(days - FloorDiv(days + 4, 7) * 7 + 4);
}

int Ctz64(std::uint64_t x) { return __builtin_ctzll(x); }
int Msb64(std::uint64_t x) { return 63 - __builtin_clzll(x); }
int Ctz32(std::uint32_t x) { return __builtin_ctz(x); }
int Msb32(std::uint32_t x) { return 31 - __builtin_clz(x); }

// Bits 1..len.
std::uint32_t ValidDays(int len) {
  return static_cast<std::uint32_t>((std::uint64_t{2} << len) - 2);
}

// Bits d (1-31) of the days whose weekday is in `weekdays` (bit 0 = Sunday) when day 1 of the
// month falls on `first_weekday`.
std::uint32_t WeekdayDays(std::uint8_t weekdays, int first_weekday) {
  const std::uint32_t w = weekdays;
  const std::uint64_t rotated = ((w >> first_weekday) | (w << (7 - first_weekday))) & 0x7F;
  return static_cast<std::uint32_t>((rotated * 0x10204081ull) << 1);
}

// ---------------------------------------------------------------------------------------------
// Parsing.

constexpr std::array<std::string_view, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                          "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> kWeekdayNames = {"sun", "mon", "tue", "wed",
                                                           "thu", "fri", "sat"};

struct FieldSpec {
  std::string_view name;
  int min;
  int max;
  const std::string_view* names;  // nullptr: numbers only
  int name_count;
  int name_base;  // value of names[0]
};

constexpr FieldSpec kFields[5] = {
    {"minute", 0, 59, nullptr, 0, 0},
    {"hour", 0, 23, nullptr, 0, 0},
    {"day-of-month", 1, 31, nullptr, 0, 0},
    {"month", 1, 12, kMonthNames.data(), 12, 1},
    {"day-of-week", 0, 7, kWeekdayNames.data(), 7, 0},
};

struct Macro {
  std::string_view name;
  std::string_view fields;
};

constexpr Macro kMacros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

// The dialects read by the fugit gem.
bool IsFugit(CronDialect dialect) {
  return dialect == CronDialect::kGitLab || dialect == CronDialect::kSidekiqCron;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsSpace(char c) { return IsBlank(c) || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Parses one field into bits (bit v = value v). Returns an error detail, empty when fine.
class FieldParser {
 public:
  FieldParser(const FieldSpec& spec, CronDialect dialect) : spec_(spec), dialect_(dialect) {
    const bool gitlab = IsFugit(dialect);
    // 7 is Sunday for Debian cron and fugit only; fugit reads hour 24 as 0.
    if (dialect != CronDialect::kDebianCron && !gitlab && spec.max == 7) spec_.max = 6;
    if (gitlab && spec.name == "hour") spec_.max = 24;
  }

  // kGitLab's items that are no plain value: `L` and `-n` days, `w#n` weekdays.
  struct Extras {
    std::uint32_t days_from_end = 0;
    std::array<std::uint16_t, 7> nth_weekdays{};
  };

  // `unrestricted` receives robfig/cron's star bit: some item is `*` or `?` with a step of 1.
  std::string Parse(std::string_view text, std::uint64_t* bits, bool* unrestricted,
                    Extras* extras = nullptr) {
    std::uint64_t result = 0;
    std::size_t start = 0;
    *unrestricted = false;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view item = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      // fugit drops a `*` item from a list of weekdays (`*,1` is Monday only).
      const bool dropped =
          IsFugit(dialect_) && spec_.max == 7 && item == "*" && item.size() != text.size();
      std::string error;
      if (!dropped) {
        error = extras != nullptr && IsExtra(item) ? ParseExtra(item, extras)
                                                   : ParseItem(item, &result, unrestricted);
      }
      if (!error.empty()) return error;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    *bits = result;
    return {};
  }

 private:
  struct Value {
    int number = 0;
    std::string_view token;
  };

  std::string ExpectedValue(std::string_view rest) const {
    return fmt::format("expected a number{} or \"*\", got \"{}\"",
                       spec_.names != nullptr ? ", a name" : "", rest);
  }

  bool IsDayOfMonth() const { return spec_.max == 31; }
  bool IsDayOfWeek() const { return spec_.max == 7; }

  // kGitLab: `L`, `-n` and their ranges in day-of-month; `w#n` in day-of-week; `%`, refused.
  bool IsExtra(std::string_view item) const {
    if (item.empty()) return false;
    if (IsDayOfMonth()) return item[0] == 'L' || item[0] == 'l' || item[0] == '-';
    return IsDayOfWeek() && item.find_first_of("#%") != std::string_view::npos;
  }

  // A day counted from the month's end: `L` is 1, `-n` is n (1-31).
  std::string ReadFromEnd(std::string_view item, std::size_t* pos, int* from_end) const {
    if (*pos < item.size() && (item[*pos] == 'L' || item[*pos] == 'l')) {
      ++*pos;
      *from_end = 1;
      return {};
    }
    if (*pos >= item.size() || item[*pos] != '-') return ExpectedValue(item.substr(*pos));
    const std::size_t start = ++*pos;
    while (*pos < item.size() && IsDigit(item[*pos])) ++*pos;
    const std::string_view digits = item.substr(start, *pos - start);
    if (digits.empty() || digits.size() > 2) return ExpectedValue(item.substr(start - 1));
    *from_end = digits.size() == 1 ? digits[0] - '0' : (digits[0] - '0') * 10 + digits[1] - '0';
    if (*from_end < 1 || *from_end > 31) {
      return fmt::format("-{} is out of range -31 to -1", digits);
    }
    return {};
  }

  std::string ParseExtra(std::string_view item, Extras* extras) const {
    if (IsDayOfWeek()) {
      if (item.find('%') != std::string_view::npos) {
        return "a weekday modulo (`mon%2`, every other week) is not supported";
      }
      std::size_t pos = 0;
      Value day;
      std::string error = ReadValue(item, &pos, &day);
      if (!error.empty()) return error;
      if (day.token.empty() || pos >= item.size() || item[pos] != '#') {
        return fmt::format("\"{}\": `#` follows a single weekday (`mon#2`, `fri#-1`)", item);
      }
      ++pos;
      const bool negative = pos < item.size() && item[pos] == '-';
      if (negative) ++pos;
      int nth = 0;
      if (pos + 1 == item.size() && IsDigit(item[pos])) {
        nth = item[pos] - '0';
      } else if (!negative && pos + 1 == item.size() && (item[pos] == 'L' || item[pos] == 'l')) {
        nth = 1;  // `#L`: the last
      }
      if (nth < 1 || nth > 5) {
        return fmt::format("\"{}\": expected 1 to 5 or -1 to -5 after `#`", item);
      }
      const bool from_end = negative || item[pos] == 'L' || item[pos] == 'l';
      extras->nth_weekdays[day.number % 7] |=
          static_cast<std::uint16_t>(1u << (from_end ? nth + 4 : nth - 1));
      return {};
    }
    std::size_t pos = 0;
    int first = 0;
    std::string error = ReadFromEnd(item, &pos, &first);
    if (!error.empty()) return error;
    int last = first;
    const bool ranged = pos < item.size() && item[pos] == '-';
    if (ranged) {
      ++pos;
      error = ReadFromEnd(item, &pos, &last);
      if (!error.empty()) {
        return fmt::format(
            "a range of days from the end needs both ends from the end (`-3--1`): {}", error);
      }
      // -3--1: from the third last to the last day.
      if (first < last) return fmt::format("range start -{} is after its end -{}", first, last);
    }
    int step = 1;
    if (pos < item.size() && item[pos] == '/') {
      // fugit reads `L/2` as `L-31/2`, a range from the end to a day from the start: refused.
      if (!ranged) return "a step needs a range of days from the end (`-7--1/2`)";
      const std::size_t start = ++pos;
      while (pos < item.size() && IsDigit(item[pos])) ++pos;
      const std::string_view digits = item.substr(start, pos - start);
      if (digits.empty() || digits.size() > 2) return "missing step after \"/\"";
      step = std::stoi(std::string(digits));
      if (step < 1) return "step must be at least 1";
    }
    if (pos != item.size()) return fmt::format("unexpected \"{}\"", item.substr(pos));
    for (int n = first; n >= last; n -= step) extras->days_from_end |= std::uint32_t{1} << n;
    return {};
  }

  // Reads a number or a name at item[*pos]; token stays empty when there is none.
  std::string ReadValue(std::string_view item, std::size_t* pos, Value* value) const {
    const std::size_t start = *pos;
    while (*pos < item.size() && IsAlnum(item[*pos])) ++*pos;
    value->token = item.substr(start, *pos - start);
    const std::string_view token = value->token;
    if (token.empty()) return {};
    if (std::all_of(token.begin(), token.end(), IsDigit)) {
      std::string_view digits = token;
      while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
      int number = 0;
      if (digits.size() <= 4) {
        for (char c : digits) number = number * 10 + (c - '0');
      } else {
        number = spec_.max + 1;
      }
      if (number < spec_.min || number > spec_.max) {
        return fmt::format("{} is out of range {}-{}", token, spec_.min, spec_.max);
      }
      value->number = number;
      return {};
    }
    if (spec_.names == nullptr || IsDigit(token.front())) {
      return fmt::format("\"{}\" is not a number", token);
    }
    for (int i = 0; i < spec_.name_count; ++i) {
      if (EqualsIgnoreCase(token, spec_.names[i])) {
        value->number = spec_.name_base + i;
        return {};
      }
    }
    return fmt::format("unknown name \"{}\"", token);
  }

  std::string ParseItem(std::string_view item, std::uint64_t* bits, bool* unrestricted) const {
    if (item.empty()) return "empty list item";
    std::size_t pos = 0;
    int low = spec_.min;
    int high = spec_.max;
    bool single = false;
    bool star = false;
    bool wrap = false;
    const bool kubernetes = dialect_ == CronDialect::kKubernetes;
    if (item[0] == '*' || (kubernetes && item[0] == '?')) {
      pos = 1;
      star = true;
      // robfig/cron reads "*-5" as "*": after a wildcard the range end is never looked at.
      if (kubernetes && pos < item.size() && item[pos] == '-') {
        pos = std::min(item.find('/', pos), item.size());
      }
    } else {
      Value first;
      std::string error = ReadValue(item, &pos, &first);
      if (!error.empty()) return error;
      if (first.token.empty()) return ExpectedValue(item);
      low = high = first.number;
      single = true;
      if (pos < item.size() && item[pos] == '-') {
        ++pos;
        Value second;
        if (IsFugit(dialect_) && IsDayOfMonth() && pos < item.size() &&
            (item[pos] == 'L' || item[pos] == 'l')) {
          ++pos;  // `1-L`: to the month's last day
          second.token = item.substr(pos - 1, 1);
          second.number = 31;
        } else {
          error = ReadValue(item, &pos, &second);
        }
        if (!error.empty()) return error;
        if (second.token.empty()) {
          return fmt::format("missing range end after \"{}-\"", first.token);
        }
        high = second.number;
        single = false;
        if (low > high && IsFugit(dialect_)) {
          wrap = true;  // fugit: `fri-mon`, `22-2` wrap around the field's end
        } else if (low > high) {
          return fmt::format("range start {} is after its end {}", low, high);
        }
      }
    }
    int step = 1;
    if (pos < item.size() && item[pos] == '/') {
      ++pos;
      const std::size_t start = pos;
      while (pos < item.size() && IsAlnum(item[pos])) ++pos;
      const std::string_view token = item.substr(start, pos - start);
      if (token.empty()) return "missing step after \"/\"";
      if (!std::all_of(token.begin(), token.end(), IsDigit)) {
        return fmt::format("step \"{}\" is not a number", token);
      }
      std::string_view digits = token;
      while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
      step = 0;
      if (digits.size() <= 4) {
        for (char c : digits) step = step * 10 + (c - '0');
      } else {
        step = 10000;  // larger than any field: only the start value matches
      }
      if (step < 1) return "step must be at least 1";
      if (single) high = spec_.max;  // `a/n` means `a-max/n`
    }
    if (pos != item.size()) return fmt::format("unexpected \"{}\"", item.substr(pos));
    if (wrap) {
      // Stepped along low..max, then min..high.
      const int span = spec_.max - low + 1 + high - spec_.min + 1;
      for (int i = 0; i < span; i += step) {
        const int v = low + i <= spec_.max ? low + i : spec_.min + (low + i - spec_.max - 1);
        *bits |= std::uint64_t{1} << v;
      }
    } else {
      for (int v = low; v <= high; v += step) *bits |= std::uint64_t{1} << v;
    }
    if (star && step == 1) *unrestricted = true;
    return {};
  }

  FieldSpec spec_;
  CronDialect dialect_;
};

// Celery's crontab_parser (celery/schedules.py, 5.2), item by item: its four patterns are tried
// with re.match, so a part only has to start with one, and a number is what int() or, failing
// that, celery.utils.time.weekday() makes of a token.
class CeleryFieldParser {
 public:
  explicit CeleryFieldParser(const FieldSpec& spec)
      : min_(spec.min), max_(spec.max == 7 ? 6 : spec.max) {}

  std::string Parse(std::string_view text, std::uint64_t* bits) const {
    std::uint64_t result = 0;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string_view part = text.substr(
          start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (part.empty()) return "empty list item";
      std::string error = ParsePart(part, &result);
      if (!error.empty()) return error;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    *bits = result;
    return {};
  }

 private:
  static bool IsWord(char c) { return IsAlnum(c) || c == '_'; }
  // str.strip()'s ASCII whitespace, which int() ignores around a number.
  static bool IsPythonSpace(char c) { return IsSpace(c) || (c >= '\x1c' && c <= '\x1f'); }

  static std::size_t WordEnd(std::string_view s, std::size_t pos) {
    while (pos < s.size() && IsWord(s[pos])) ++pos;
    return pos;
  }

  // int(s) for a base-10 str: spaces around, an optional '+', digits with single '_' between
  // them; -1 when int() raises (a '-' never gets here).
  static int PythonInt(std::string_view s) {
    while (!s.empty() && IsPythonSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && IsPythonSpace(s.back())) s.remove_suffix(1);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    if (s.empty() || !IsDigit(s.front()) || !IsDigit(s.back())) return -1;
    int value = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '_') {
        if (s[i - 1] == '_') return -1;
        continue;
      }
      if (!IsDigit(s[i])) return -1;
      value = std::min(value * 10 + (s[i] - '0'), 100000);  // past any field's end
    }
    return value;
  }

  // crontab_parser._expand_number.
  std::string Number(std::string_view token, int* value) const {
    if (token.front() == '-') return "negative numbers are not supported";
    int n = PythonInt(token);
    if (n < 0) {
      // weekday(): the first three letters, lower-cased, name a day (Sunday is 0).
      n = -1;
      for (std::size_t i = 0; i < kWeekdayNames.size() && token.size() >= 3; ++i) {
        if (EqualsIgnoreCase(token.substr(0, 3), kWeekdayNames[i])) n = static_cast<int>(i);
      }
      if (n < 0) return fmt::format("\"{}\" is neither a number nor a weekday", token);
    }
    if (n < min_ || n > max_) return fmt::format("{} is out of range {}-{}", n, min_, max_);
    *value = n;
    return {};
  }

  // The values of `from-to` in Celery's order (a range whose end is below its start wraps).
  std::string Range(std::string_view from, std::string_view to, std::vector<int>* values) const {
    int low = 0;
    int high = 0;
    std::string error = Number(from, &low);
    if (error.empty()) error = Number(to, &high);
    if (!error.empty()) return error;
    if (high < low) {
      for (int v = low; v <= max_; ++v) values->push_back(v);
      low = min_;
    }
    for (int v = low; v <= high; ++v) values->push_back(v);
    return {};
  }

  std::string ParsePart(std::string_view part, std::uint64_t* bits) const {
    std::vector<int> values;
    std::string_view step;
    bool stepped = false;
    std::string error;
    // `(\w+?)-(\w+)`, optionally followed by `/(\w+)?`.
    const std::size_t first_end = WordEnd(part, 0);
    const std::size_t second_end =
        first_end > 0 && first_end < part.size() && part[first_end] == '-'
            ? WordEnd(part, first_end + 1)
            : 0;
    if (second_end > first_end + 1) {
      error = Range(part.substr(0, first_end),
                    part.substr(first_end + 1, second_end - first_end - 1), &values);
      if (second_end < part.size() && part[second_end] == '/') {
        stepped = true;
        step = part.substr(second_end + 1, WordEnd(part, second_end + 1) - second_end - 1);
      }
    } else if (part.size() >= 2 && part[0] == '*' && part[1] == '/') {  // `\*/(\w+)?`
      stepped = true;
      step = part.substr(2, WordEnd(part, 2) - 2);
      for (int v = min_; v <= max_; ++v) values.push_back(v);
    } else if (part == "*") {
      for (int v = min_; v <= max_; ++v) values.push_back(v);
    } else {
      int value = 0;
      error = Number(part, &value);
      values.push_back(value);
    }
    if (!error.empty()) return error;
    std::size_t every = 1;
    if (stepped) {
      if (step.empty()) return "missing step after \"/\"";
      const int n = PythonInt(step);
      if (n < 0) return fmt::format("step \"{}\" is not a number", step);
      if (n == 0) return "step must be at least 1";
      every = static_cast<std::size_t>(n);
    }
    for (std::size_t i = 0; i < values.size(); i += every) *bits |= std::uint64_t{1} << values[i];
    return {};
  }

  int min_;
  int max_;
};

// kCelery's `@every <duration>`.
Result<std::int64_t> CeleryEvery(std::string_view text) {
  auto seconds = ParseDuration(Trim(text));
  if (!seconds) return Error{fmt::format("@every: {}", seconds.error())};
  if (*seconds <= 0) return Error{"@every needs a period longer than 0s"};
  return *seconds;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Calendar search over one expression's bitsets, on local minutes (no time zone).

class CronCalendar {
 public:
  explicit CronCalendar(const CronExpression& e)
      : e_(e),
        or_rule_(!e.dom_star_ && !e.dow_star_),
        first_minute_(e.minutes_ ? Ctz64(e.minutes_) : 0),
        last_minute_(e.minutes_ ? Msb64(e.minutes_) : 0),
        first_tod_(e.hours_ ? Ctz32(e.hours_) * 60 + first_minute_ : 0),
        last_tod_(e.hours_ ? Msb32(e.hours_) * 60 + last_minute_ : 0),
        has_nth_(std::any_of(e.nth_weekdays_.begin(), e.nth_weekdays_.end(),
                             [](std::uint16_t bits) { return bits != 0; })) {}

  // Whether the expression has any fire time at all.
  bool fires() const { return e_.fires_ && !e_.reboot_; }

  // Days of the month `month` (bits 1-31) that match, for a month of `len` days whose day 1 falls
  // on `first_weekday`.
  std::uint32_t DayMask(int month, int len, int first_weekday) const {
    if (!((e_.months_ >> month) & 1)) return 0;
    std::uint32_t weekday_days =
        e_.weekdays_ == 0x7F ? 0xFFFFFFFEu : WeekdayDays(e_.weekdays_, first_weekday);
    std::uint32_t month_days = e_.days_;
    if (e_.days_from_end_ != 0) month_days |= FromEndDays(e_.days_from_end_, len);
    if (has_nth_) weekday_days |= NthWeekdayDays(first_weekday, len);
    const std::uint32_t days = or_rule_ ? (month_days | weekday_days) : (month_days & weekday_days);
    return days & ValidDays(len);
  }

  // Bits of the days counted from the end (`L`, `-n`) in a month of `len` days.
  static std::uint32_t FromEndDays(std::uint32_t from_end, int len) {
    std::uint32_t days = 0;
    for (; from_end != 0; from_end &= from_end - 1) {
      const int day = len + 1 - Ctz32(from_end);
      if (day >= 1) days |= std::uint32_t{1} << day;
    }
    return days;
  }

  // Bits of the nth weekdays (`mon#2`, `fri#-1`) of a month.
  std::uint32_t NthWeekdayDays(int first_weekday, int len) const {
    std::uint32_t days = 0;
    for (int weekday = 0; weekday < 7; ++weekday) {
      const int first = 1 + (weekday - first_weekday + 7) % 7;
      const int last = first + (len - first) / 7 * 7;
      for (std::uint32_t nth = e_.nth_weekdays_[weekday]; nth != 0; nth &= nth - 1) {
        const int bit = Ctz32(nth);
        const int day = bit < 5 ? first + 7 * bit : last - 7 * (bit - 5);
        if (day >= 1 && day <= len) days |= std::uint32_t{1} << day;
      }
    }
    return days;
  }

  // Smallest matching local minute in [from, limit).
  std::optional<std::int64_t> NextLocal(std::int64_t from, std::int64_t limit) const {
    limit = std::min(limit, from + kSearchMinutes);
    if (from >= limit) return std::nullopt;
    const std::int64_t day = FloorDiv(from, kMinutesPerDay);
    const std::int64_t last_day = FloorDiv(limit - 1, kMinutesPerDay);
    std::optional<std::int64_t> match_day = NextDay(day, last_day);
    if (!match_day) return std::nullopt;
    std::int64_t candidate;
    if (*match_day == day) {
      const int tod = NextTimeOfDay(static_cast<int>(from - day * kMinutesPerDay));
      if (tod >= 0) {
        candidate = day * kMinutesPerDay + tod;
        return candidate < limit ? std::optional<std::int64_t>(candidate) : std::nullopt;
      }
      match_day = NextDay(day + 1, last_day);
      if (!match_day) return std::nullopt;
    }
    candidate = *match_day * kMinutesPerDay + first_tod_;
    return candidate < limit ? std::optional<std::int64_t>(candidate) : std::nullopt;
  }

  // Largest matching local minute in [lower, at].
  std::optional<std::int64_t> PrevLocal(std::int64_t at, std::int64_t lower) const {
    lower = std::max(lower, at - kSearchMinutes);
    if (at < lower) return std::nullopt;
    const std::int64_t day = FloorDiv(at, kMinutesPerDay);
    const std::int64_t first_day = FloorDiv(lower, kMinutesPerDay);
    std::optional<std::int64_t> match_day = PrevDay(day, first_day);
    if (!match_day) return std::nullopt;
    std::int64_t candidate;
    if (*match_day == day) {
      const int tod = PrevTimeOfDay(static_cast<int>(at - day * kMinutesPerDay));
      if (tod >= 0) {
        candidate = day * kMinutesPerDay + tod;
        return candidate >= lower ? std::optional<std::int64_t>(candidate) : std::nullopt;
      }
      match_day = PrevDay(day - 1, first_day);
      if (!match_day) return std::nullopt;
    }
    candidate = *match_day * kMinutesPerDay + last_tod_;
    return candidate >= lower ? std::optional<std::int64_t>(candidate) : std::nullopt;
  }

  // Longest distance in minutes between consecutive matching local minutes within [a, b], where
  // a and b match; 0 when a == b. Cost: one pass over the months between a and b, plus at most
  // 24 hours and 120 minutes of time-of-day bits.
  std::int64_t MaxGap(std::int64_t a, std::int64_t b) const {
    if (a >= b) return 0;
    const std::int64_t day_a = FloorDiv(a, kMinutesPerDay);
    const std::int64_t day_b = FloorDiv(b, kMinutesPerDay);
    const int tod_a = static_cast<int>(a - day_a * kMinutesPerDay);
    const int tod_b = static_cast<int>(b - day_b * kMinutesPerDay);
    if (day_a == day_b) return IntraDayMaxGap(tod_a, tod_b);
    std::int64_t best = std::max(IntraDayMaxGap(tod_a, kLastTimeOfDay), IntraDayMaxGap(0, tod_b));
    std::int64_t longest_day_gap = 0;
    std::int64_t matching_days = 0;
    ScanDays(day_a, day_b, &longest_day_gap, &matching_days);
    if (matching_days >= 3) best = std::max(best, IntraDayMaxGap(0, kLastTimeOfDay));
    return std::max(best, longest_day_gap * kMinutesPerDay + first_tod_ - last_tod_);
  }

 private:
  // First matching time of day (minutes since midnight) at or after tod; -1 when none.
  int NextTimeOfDay(int tod) const {
    const int hour = tod / 60;
    const int minute = tod % 60;
    if ((e_.hours_ >> hour) & 1) {
      const std::uint64_t minutes = e_.minutes_ & (~std::uint64_t{0} << minute);
      if (minutes) return hour * 60 + Ctz64(minutes);
    }
    const std::uint32_t hours =
        e_.hours_ & static_cast<std::uint32_t>(~std::uint64_t{0} << (hour + 1));
    return hours ? Ctz32(hours) * 60 + first_minute_ : -1;
  }

  // Last matching time of day at or before tod; -1 when none.
  int PrevTimeOfDay(int tod) const {
    const int hour = tod / 60;
    const int minute = tod % 60;
    if ((e_.hours_ >> hour) & 1) {
      const std::uint64_t minutes = e_.minutes_ & ((std::uint64_t{2} << minute) - 1);
      if (minutes) return hour * 60 + Msb64(minutes);
    }
    const std::uint32_t hours = e_.hours_ & ((std::uint32_t{1} << hour) - 1);
    return hours ? Msb32(hours) * 60 + last_minute_ : -1;
  }

  // First matching day number in [day, last_day].
  std::optional<std::int64_t> NextDay(std::int64_t day, std::int64_t last_day) const {
    if (day > last_day) return std::nullopt;
    const CivilDate date = CivilFromDays(day);
    std::int64_t year = date.year;
    int month = date.month;
    std::int64_t month_start = day - (date.day - 1);
    std::uint32_t from_day = ~std::uint32_t{0} << date.day;  // bits >= date.day
    while (month_start <= last_day) {
      const int len = DaysInMonth(year, month);
      const std::uint32_t mask = DayMask(month, len, WeekdayOfDay(month_start)) & from_day;
      if (mask) {
        const std::int64_t found = month_start + Ctz32(mask) - 1;
        return found <= last_day ? std::optional<std::int64_t>(found) : std::nullopt;
      }
      month_start += len;
      from_day = ~std::uint32_t{0};
      if (++month > 12) {
        month = 1;
        ++year;
      }
    }
    return std::nullopt;
  }

  // Last matching day number in [first_day, day].
  std::optional<std::int64_t> PrevDay(std::int64_t day, std::int64_t first_day) const {
    if (day < first_day) return std::nullopt;
    const CivilDate date = CivilFromDays(day);
    std::int64_t year = date.year;
    int month = date.month;
    std::int64_t month_start = day - (date.day - 1);
    int len = DaysInMonth(year, month);
    std::uint32_t to_day = static_cast<std::uint32_t>((std::uint64_t{2} << date.day) - 1);
    while (month_start + len - 1 >= first_day) {
      const std::uint32_t mask = DayMask(month, len, WeekdayOfDay(month_start)) & to_day;
      if (mask) {
        const std::int64_t found = month_start + Msb32(mask) - 1;
        return found >= first_day ? std::optional<std::int64_t>(found) : std::nullopt;
      }
      if (--month < 1) {
        month = 12;
        --year;
      }
      len = DaysInMonth(year, month);
      month_start -= len;
      to_day = ~std::uint32_t{0};
    }
    return std::nullopt;
  }

  // Longest distance in days between consecutive matching days within [first, last], and how
  // many matching days there are.
  void ScanDays(std::int64_t first, std::int64_t last, std::int64_t* longest,
                std::int64_t* count) const {
    const CivilDate date = CivilFromDays(first);
    std::int64_t year = date.year;
    int month = date.month;
    std::int64_t month_start = first - (date.day - 1);
    std::int64_t previous = -1;
    bool have_previous = false;
    while (month_start <= last) {
      const int len = DaysInMonth(year, month);
      const int low = static_cast<int>(std::max<std::int64_t>(1, first - month_start + 1));
      const int high = static_cast<int>(std::min<std::int64_t>(len, last - month_start + 1));
      const std::uint32_t range = ValidDays(high) & ~ValidDays(low - 1);
      std::uint32_t mask = DayMask(month, len, WeekdayOfDay(month_start)) & range;
      if (mask == range) {  // every day of the range matches
        const std::int64_t first_match = month_start + low - 1;
        if (have_previous) *longest = std::max(*longest, first_match - previous);
        if (high > low) *longest = std::max<std::int64_t>(*longest, 1);
        previous = month_start + high - 1;
        have_previous = true;
        *count += high - low + 1;
      } else {
        while (mask) {
          const std::int64_t match = month_start + Ctz32(mask) - 1;
          if (have_previous) *longest = std::max(*longest, match - previous);
          previous = match;
          have_previous = true;
          ++*count;
          mask &= mask - 1;
        }
      }
      month_start += len;
      if (++month > 12) {
        month = 1;
        ++year;
      }
    }
  }

  // Longest distance between consecutive matching times of day t1 < t2 with lo <= t1, t2 <= hi.
  std::int64_t IntraDayMaxGap(int lo, int hi) const {
    int best = 0;
    int previous = -1;
    int minute_gap = -1;  // longest gap between consecutive matching minutes of one hour
    for (std::uint32_t hours = e_.hours_; hours; hours &= hours - 1) {
      const int base = Ctz32(hours) * 60;
      if (base + last_minute_ < lo) continue;
      if (base + first_minute_ > hi) break;
      if (base + first_minute_ >= lo && base + last_minute_ <= hi) {
        if (previous >= 0) best = std::max(best, base + first_minute_ - previous);
        if (minute_gap < 0) minute_gap = MinuteGap();
        best = std::max(best, minute_gap);
        previous = base + last_minute_;
        continue;
      }
      for (std::uint64_t minutes = e_.minutes_; minutes; minutes &= minutes - 1) {
        const int t = base + Ctz64(minutes);
        if (t < lo) continue;
        if (t > hi) break;
        if (previous >= 0) best = std::max(best, t - previous);
        previous = t;
      }
    }
    return best;
  }

  int MinuteGap() const {
    int best = 0;
    int previous = -1;
    for (std::uint64_t minutes = e_.minutes_; minutes; minutes &= minutes - 1) {
      const int m = Ctz64(minutes);
      if (previous >= 0) best = std::max(best, m - previous);
      previous = m;
    }
    return best;
  }

  const CronExpression& e_;
  const bool or_rule_;
  const int first_minute_;
  const int last_minute_;
  const int first_tod_;  // first matching time of day, minutes since midnight
  const int last_tod_;
  const bool has_nth_;
};

// ---------------------------------------------------------------------------------------------
// CronExpression.

Result<CronExpression> CronExpression::Parse(std::string_view text, CronDialect dialect) {
  if (dialect == CronDialect::kSystemdCalendar) {
    return Error{"a systemd calendar expression is not a cron line (see CalendarSpec)"};
  }
  const std::string_view trimmed = Trim(text);
  if (dialect == CronDialect::kCelery &&
      std::any_of(trimmed.begin(), trimmed.end(), [](char c) { return (c & 0x80) != 0; })) {
    return Error{"only ASCII text is read as a Celery crontab"};
  }
  CronExpression e;
  e.text_ = std::string(trimmed);
  e.dialect_ = dialect;
  std::string_view body = trimmed;
  if (dialect == CronDialect::kKubernetes &&
      (trimmed.rfind("TZ=", 0) == 0 || trimmed.rfind("CRON_TZ=", 0) == 0)) {
    return Error{"Kubernetes refuses TZ= and CRON_TZ= in a schedule: set the job's timezone"};
  }
  if (!trimmed.empty() && trimmed.front() == '@') {
    std::size_t end = 0;
    while (end < trimmed.size() && !IsBlank(trimmed[end])) ++end;
    const std::string_view name = trimmed.substr(0, end);
    // Debian cron compares macro names in any case; robfig/cron only in lower case.
    auto is = [dialect](std::string_view a, std::string_view b) {
      return dialect == CronDialect::kDebianCron ? EqualsIgnoreCase(a, b) : a == b;
    };
    if (dialect == CronDialect::kGitHubActions) {
      return Error{fmt::format("GitHub Actions does not accept macros such as \"{}\"", name)};
    }
    if (dialect == CronDialect::kGitLab) {
      // GitLab parses "<cron> <cron_timezone>", and fugit reads no macro followed by a zone.
      return Error{fmt::format("GitLab does not accept macros such as \"{}\"", name)};
    }
    if (dialect == CronDialect::kCelery) {
      if (name != "@every") {
        return Error{fmt::format(
            "Celery has no macros such as \"{}\"; an interval task is \"@every <duration>\"",
            name)};
      }
      auto every = CeleryEvery(trimmed.substr(end));
      if (!every) return Error{every.error()};
      e.every_ = *every;
      return e;
    }
    if (dialect == CronDialect::kSidekiqCron && name == "@every") {
      return Error{"Sidekiq-cron does not accept @every (fugit reads no such cron)"};
    }
    if (is(name, "@every")) {
      return Error{
          "@every is not supported: its fire times depend on when the CronJob was created"};
    }
    if (is(name, "@reboot")) {
      if (dialect != CronDialect::kDebianCron) {
        return Error{"@reboot has no fire times and is only allowed for crontab sources"};
      }
      body = {};
      e.reboot_ = true;
    } else {
      body = {};
      for (const Macro& macro : kMacros) {
        if (is(name, macro.name)) body = macro.fields;
      }
      if (dialect == CronDialect::kSidekiqCron && name == "@noon") body = "0 12 * * *";
      if (body.empty()) return Error{fmt::format("unknown macro \"{}\"", name)};
    }
    if (end != trimmed.size()) {
      return Error{fmt::format("unexpected text after \"{}\"", name)};
    }
    if (e.reboot_) return e;
  }

  const bool gitlab = IsFugit(dialect);
  std::array<std::string_view, 6> fields;  // a sixth only for fugit's leading seconds
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos < body.size()) {
    while (pos < body.size() && IsBlank(body[pos])) ++pos;
    if (pos == body.size()) break;
    const std::size_t start = pos;
    while (pos < body.size() && !IsBlank(body[pos])) ++pos;
    if (count < fields.size()) fields[count] = body.substr(start, pos - start);
    ++count;
  }
  if (gitlab && count == 6) {
    std::uint64_t seconds = 0;
    bool unused = false;
    constexpr FieldSpec kSeconds{"second", 0, 59, nullptr, 0, 0};
    std::string error = FieldParser(kSeconds, dialect).Parse(fields[0], &seconds, &unused);
    if (!error.empty()) return Error{fmt::format("second field \"{}\": {}", fields[0], error)};
    e.second_ = static_cast<std::uint8_t>(Ctz64(seconds));
    std::copy(fields.begin() + 1, fields.end(), fields.begin());
    count = 5;
  }
  if (count != 5) {
    return Error{
        fmt::format("expected {}5 fields (minute hour day-of-month month day-of-week), "
                    "got {}",
                    gitlab ? "5 or, with seconds first, 6; not " : "", count)};
  }

  std::array<std::uint64_t, 5> bits{};
  std::array<bool, 5> star_bit{};
  FieldParser::Extras extras;
  const bool celery = dialect == CronDialect::kCelery;
  for (std::size_t i = 0; i < 5; ++i) {
    std::string error =
        celery ? CeleryFieldParser(kFields[i]).Parse(fields[i], &bits[i])
               : FieldParser(kFields[i], dialect)
                     .Parse(fields[i], &bits[i], &star_bit[i], gitlab ? &extras : nullptr);
    if (!error.empty()) {
      return Error{fmt::format("{} field \"{}\": {}", kFields[i].name, fields[i], error)};
    }
  }
  if (gitlab) {
    bits[1] = (bits[1] | (bits[1] >> 24)) & 0xFFFFFF;  // hour 24 is 0
    e.days_from_end_ = extras.days_from_end;
    e.nth_weekdays_ = extras.nth_weekdays;
    // fugit (compact_month_days): when both are listed (no `*` item), a month that can hold
    // none of the days of month is dropped, weekdays listed or not (`0 0 30 2-12 1` never fires
    // in February), and a cron left with no month is refused. A day from the end fits any.
    if (!star_bit[2] && !star_bit[3] && extras.days_from_end == 0) {
      for (int month = 1; month <= 12; ++month) {
        const int longest = month == 2 ? 29 : DaysInMonth(2001, month);
        if ((bits[2] & ValidDays(longest)) == 0) bits[3] &= ~(std::uint64_t{1} << month);
      }
      if (bits[3] == 0) {
        return Error{fmt::format(
            "no month of \"{}\" has a day \"{}\": GitLab (fugit) refuses the cron, even with "
            "weekdays listed",
            fields[3], fields[2])};
      }
    }
  }
  e.minutes_ = bits[0];
  e.hours_ = static_cast<std::uint32_t>(bits[1]);
  e.days_ = static_cast<std::uint32_t>(bits[2]);
  e.months_ = static_cast<std::uint16_t>(bits[3]);
  e.weekdays_ = static_cast<std::uint8_t>((bits[4] | (bits[4] >> 7)) & 0x7F);  // 7 is Sunday
  e.minute_star_ = fields[0].front() == '*';
  e.hour_star_ = fields[1].front() == '*';
  if (dialect == CronDialect::kKubernetes) {
    e.dom_star_ = star_bit[2];
    e.dow_star_ = star_bit[4];
  } else if (gitlab) {
    // fugit: a `*` item (or `*/1`) leaves day-of-month open; day-of-week only when it is `*`.
    e.dom_star_ = star_bit[2];
    e.dow_star_ = fields[4] == "*";
  } else if (celery) {
    e.dom_star_ = e.dow_star_ = true;  // day of month AND day of week
  } else {
    e.dom_star_ = fields[2].front() == '*';
    e.dow_star_ = fields[4].front() == '*';
  }

  // Every real (month, day), February 29 included, falls on every weekday in some year. So with
  // the OR rule any weekday fires, and with AND the expression fires iff some allowed month has
  // an allowed day.
  if (gitlab) {
    // Days from the end and nth weekdays depend on the month's length and first weekday: try
    // each (every combination occurs within 400 years).
    const CronCalendar calendar(e);
    for (int month = 1; month <= 12 && !e.fires_; ++month) {
      for (int len : {DaysInMonth(2001, month), month == 2 ? 29 : 0}) {
        for (int first_weekday = 0; len > 0 && first_weekday < 7 && !e.fires_; ++first_weekday) {
          e.fires_ = calendar.DayMask(month, len, first_weekday) != 0;
        }
      }
    }
  } else if (!e.dom_star_ && !e.dow_star_) {
    e.fires_ = true;
  } else {
    for (int month = 1; month <= 12 && !e.fires_; ++month) {
      const int len = month == 2 ? 29 : DaysInMonth(2001, month);
      e.fires_ = ((e.months_ >> month) & 1) && (e.days_ & ValidDays(len)) != 0;
    }
  }
  if (celery && !e.fires_) {
    // Celery raises "unable to rollover" when it looks for the next run.
    return Error{fmt::format("no month of \"{}\" has a day \"{}\": Celery cannot schedule it",
                             fields[3], fields[2])};
  }
  return e;
}

bool CronExpression::Equivalent(const CronExpression& other) const {
  // Compares what fires, not how it was written: `*/15` and `0,15,30,45` are equivalent even
  // though Vixie cron's DST handling tells wildcard and fixed-time entries apart.
  if (reboot_ || other.reboot_) return reboot_ == other.reboot_;
  if (every_ || other.every_) return every_ == other.every_;
  if (!fires_ || !other.fires_) return fires_ == other.fires_;
  if (minutes_ != other.minutes_ || hours_ != other.hours_) return false;
  const CronCalendar mine(*this);
  const CronCalendar theirs(other);
  if (second_ != other.second_) return false;
  for (int month = 1; month <= 12; ++month) {
    // February twice: `L` is the 28th or the 29th.
    for (int len : {DaysInMonth(2001, month), month == 2 ? 29 : 0}) {
      for (int first_weekday = 0; len > 0 && first_weekday < 7; ++first_weekday) {
        if (mine.DayMask(month, len, first_weekday) != theirs.DayMask(month, len, first_weekday)) {
          return false;
        }
      }
    }
  }
  return true;
}

bool CronExpression::MatchesDay(int month, int day_of_month, int weekday) const {
  if (month < 1 || month > 12 || day_of_month < 1 || day_of_month > 31 || weekday < 0 ||
      weekday > 7) {
    return false;
  }
  if (!((months_ >> month) & 1)) return false;
  const bool dom = (days_ >> day_of_month) & 1;
  const bool dow = (weekdays_ >> (weekday % 7)) & 1;
  return (dom_star_ || dow_star_) ? (dom && dow) : (dom || dow);
}

// ---------------------------------------------------------------------------------------------
// Schedule: the calendar search across a zone's offset intervals.

namespace {

// One stretch of time with a constant UTC offset: [begin, end).
struct Interval {
  std::int64_t begin;
  std::int64_t end;
  std::int64_t offset;
  std::int64_t previous_offset;  // offset just before begin (== offset when unknown)
};

class Evaluator {
 public:
  Evaluator(const CronExpression& expression, const date::time_zone* zone, DstPolicy policy)
      : calendar_(expression),
        zone_(zone),
        vixie_fixed_((policy == DstPolicy::kVixieCron && expression.fixed_time()) ||
                     policy == DstPolicy::kCeleryBeat),
        // Celery beat waits for the wall clock, however far it jumps.
        max_jump_(policy == DstPolicy::kCeleryBeat ? kHorizonSeconds : kVixieMaxJumpSeconds) {}

  std::optional<std::int64_t> Next(std::int64_t after) const {
    if (!calendar_.fires() || after >= kMaxTime) return std::nullopt;
    std::int64_t t = std::max(after, kMinTime) + 1;
    const std::int64_t horizon = t + kHorizonSeconds;
    while (t < horizon) {
      const Interval interval = At(t);
      const std::int64_t offset = interval.offset;
      std::int64_t low = CeilDiv(t + offset, 60);
      // Non-zero only for Vixie fixed-time entries at a transition (see At).
      const std::int64_t shift = offset - interval.previous_offset;
      if (shift > 0 && shift < max_jump_) {
        // Vixie: fixed-time entries whose wall-clock times were skipped run at the jump.
        if (t == interval.begin && SkippedMatch(interval)) return interval.begin;
      } else if (shift < 0 && -shift <= max_jump_) {
        // Vixie: fixed-time entries do not run again in the repeated wall-clock stretch.
        low = std::max(low, CeilDiv(interval.begin + interval.previous_offset, 60));
      }
      const std::int64_t end = std::min(interval.end, horizon);
      if (auto match = calendar_.NextLocal(low, CeilDiv(end + offset, 60))) {
        return *match * 60 - offset;
      }
      t = interval.end;
    }
    return std::nullopt;
  }

  std::optional<std::int64_t> Previous(std::int64_t at_or_before) const {
    if (!calendar_.fires() || at_or_before < kMinTime) return std::nullopt;
    std::int64_t t = std::min(at_or_before, kMaxTime);
    const std::int64_t horizon = t - kHorizonSeconds;
    while (t > horizon) {
      const Interval interval = At(t);
      const std::int64_t offset = interval.offset;
      const std::int64_t begin = std::max(interval.begin, horizon);
      std::int64_t low = CeilDiv(begin + offset, 60);
      const std::int64_t shift = offset - interval.previous_offset;
      if (shift < 0 && -shift <= max_jump_) {
        low = std::max(low, CeilDiv(interval.begin + interval.previous_offset, 60));
      }
      if (auto match = calendar_.PrevLocal(FloorDiv(t + offset, 60), low)) {
        return *match * 60 - offset;
      }
      if (shift > 0 && shift < max_jump_ && SkippedMatch(interval)) {
        return interval.begin;
      }
      t = interval.begin - 1;
    }
    return std::nullopt;
  }

  std::optional<std::int64_t> Period(std::int64_t from) const {
    if (!calendar_.fires() || from < kMinTime || from > kMaxTime) return std::nullopt;
    const std::int64_t end = OneYearLater(from);
    const std::optional<std::int64_t> first = Next(from - 1);
    if (!first) return std::nullopt;
    if (*first >= end) {  // no fire time this year: the gap from the first one to the next
      const std::optional<std::int64_t> second = Next(*first);
      if (!second) return std::nullopt;
      return *second - *first;
    }
    // Walk the year one offset interval at a time. Inside an interval the fire times after its
    // first one are consecutive matching local minutes, so their longest gap comes from the
    // bitsets; the gap out of the interval (across a transition, or past the year's end) is
    // measured with Next.
    std::int64_t longest = 0;
    std::int64_t start = *first;
    while (true) {
      const Interval interval = At(start);
      const std::int64_t segment_end = std::min(interval.end, end);
      const std::int64_t last = Previous(segment_end - 1).value_or(start);
      if (last > start) {
        const std::int64_t local_start = start + interval.offset;  // seconds
        const std::int64_t local_last = FloorDiv(last + interval.offset, 60);
        const std::optional<std::int64_t> second =
            calendar_.NextLocal(FloorDiv(local_start, 60) + 1, local_last + 1);
        if (second) {
          longest = std::max(longest, *second * 60 - local_start);
          longest = std::max(longest, calendar_.MaxGap(*second, local_last) * 60);
        }
      }
      const std::optional<std::int64_t> next = Next(last);
      if (!next) return std::nullopt;
      longest = std::max(longest, *next - last);
      if (*next >= end) break;
      start = *next;
    }
    return longest;
  }

 private:
  Interval At(std::int64_t t) const {
    if (zone_ == nullptr) return {kMinTime - kHorizonSeconds, kMaxTime + kHorizonSeconds, 0, 0};
    using std::chrono::seconds;
    const date::sys_info info = zone_->get_info(date::sys_seconds{seconds{t}});
    Interval interval{info.begin.time_since_epoch().count(), info.end.time_since_epoch().count(),
                      info.offset.count(), info.offset.count()};
    // Vixie cron's DST rules only touch fixed-time entries; for the others the policies agree.
    if (vixie_fixed_ && interval.begin > kMinTime - kHorizonSeconds) {
      interval.previous_offset =
          zone_->get_info(date::sys_seconds{seconds{interval.begin - 1}}).offset.count();
    }
    return interval;
  }

  // Whether a matching wall-clock minute lies in the stretch skipped at the interval's start.
  bool SkippedMatch(const Interval& interval) const {
    return calendar_
        .NextLocal(CeilDiv(interval.begin + interval.previous_offset, 60),
                   CeilDiv(interval.begin + interval.offset, 60))
        .has_value();
  }

  // The same UTC date and time one year later (February 29 goes to March 1).
  static std::int64_t OneYearLater(std::int64_t t) {
    const std::int64_t day = FloorDiv(t, kSecondsPerDay);
    const CivilDate date = CivilFromDays(day);
    const std::int64_t next_day = (date.month == 2 && date.day == 29)
                                      ? DaysFromCivil(date.year + 1, 3, 1)
                                      : DaysFromCivil(date.year + 1, date.month, date.day);
    return next_day * kSecondsPerDay + (t - day * kSecondsPerDay);
  }

  const CronCalendar calendar_;
  const date::time_zone* zone_;
  const bool vixie_fixed_;
  const std::int64_t max_jump_;  // longer jumps are clock corrections: the wall clock is followed
};

}  // namespace

Schedule::Schedule(CronExpression expression, const date::time_zone* zone, DstPolicy policy)
    : parts_(std::make_shared<const Parts>(Parts{std::move(expression), {}, zone, policy, false})) {
}

Schedule::Schedule(std::vector<CalendarSpec> calendars, const date::time_zone* zone)
    : parts_(std::make_shared<const Parts>(
          Parts{{}, std::move(calendars), zone, DstPolicy::kWallClock, false})) {}

Schedule Schedule::Monotonic(const date::time_zone* zone) {
  Schedule schedule;
  schedule.parts_ = std::make_shared<const Parts>(Parts{{}, {}, zone, DstPolicy::kWallClock, true});
  return schedule;
}

const Schedule::Parts& Schedule::parts() const {
  static const Parts kNever;
  return parts_ ? *parts_ : kNever;
}

std::string Schedule::text() const {
  if (is_monotonic()) return std::string(kMonotonicSchedule);
  return is_calendar() ? CalendarText(calendars()) : expression().text();
}

bool Schedule::SameAs(std::string_view live) const {
  if (is_monotonic()) return live == kMonotonicSchedule;
  if (is_calendar()) return SameCalendars(calendars(), live);
  if (live == expression().text()) return true;
  auto parsed = CronExpression::Parse(live, expression().dialect());
  return parsed && parsed->Equivalent(expression());
}

// A seconds field (kGitLab) moves each fire time that far into its minute.
std::optional<std::int64_t> Schedule::Next(std::int64_t after) const {
  if (is_monotonic()) return std::nullopt;
  if (is_calendar()) return CalendarNext(calendars(), zone(), after);
  const int second = expression().second();
  auto next = Evaluator(expression(), zone(), policy()).Next(std::max(after, kMinTime) - second);
  return next ? std::optional<std::int64_t>(*next + second) : std::nullopt;
}

std::optional<std::int64_t> Schedule::Previous(std::int64_t at_or_before) const {
  if (is_monotonic()) return std::nullopt;
  if (is_calendar()) return CalendarPrevious(calendars(), zone(), at_or_before);
  const int second = expression().second();
  // Before year 1 there is nothing, and nothing to subtract from.
  auto previous = Evaluator(expression(), zone(), policy())
                      .Previous(at_or_before < kMinTime ? at_or_before : at_or_before - second);
  return previous ? std::optional<std::int64_t>(*previous + second) : std::nullopt;
}

std::optional<std::int64_t> Schedule::Period(std::int64_t from) const {
  if (is_monotonic()) return std::nullopt;
  if (expression().every() > 0) return expression().every();
  if (is_calendar()) return CalendarPeriod(calendars(), zone(), from);
  return Evaluator(expression(), zone(), policy()).Period(from);
}

const date::time_zone* FindZone(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, const date::time_zone*, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(name);
  } catch (const std::exception&) {
    return nullptr;  // unknown names are not cached: the spec loader reports them once
  }
  cache.emplace(std::string(name), zone);
  return zone;
}

}  // namespace schedwatch
