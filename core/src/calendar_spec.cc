// systemd calendar events. The parser follows systemd 252's calendar_spec_from_string: what it
// refuses is refused here, and the normalised form is the one systemd prints. NextUsec takes the
// steps systemd's search takes (a field at a time, each step normalised the way mktime(3)
// normalises a struct tm), because systemd's DST behaviour comes from those steps: a wall time
// in a spring-forward gap is normalised past the gap, and a repeated wall time takes the UTC
// offset of the time the search started from.
#include "schedwatch/calendar_spec.h"

#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "civil.h"
#include "schedwatch/schedule.h"

namespace schedwatch {
namespace {

constexpr int kUsecPerSec = 1000000;
constexpr int kMinYear = 1970;
constexpr int kMaxYear = 2199;
constexpr int kAllWeekdays = 127;
constexpr std::size_t kMaxComponents = 241;  // systemd refuses longer lists
constexpr int kMaxSteps = 1000;              // systemd gives up after as many
constexpr std::int64_t kSecondsPerDay = 86400;

struct CivilTime {
  std::int64_t year;
  int month, day, hour, minute, second;  // month 1-12
};

// Howard Hinnant's civil_from_days, with the time of day.
CivilTime CivilFromSeconds(std::int64_t seconds) {
  const std::int64_t days = FloorDiv(seconds, kSecondsPerDay);
  const int rest = static_cast<int>(seconds - days * kSecondsPerDay);
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2), month, day, rest / 3600, rest / 60 % 60, rest % 60};
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool StartsWithNoCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsNoCase(text.substr(0, prefix.size()), prefix);
}

// systemd's timezone_is_valid: a plain relative path of the zoneinfo directory.
const date::time_zone* ZoneNamed(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.back() == '/') return nullptr;
  char previous = 0;
  for (char c : name) {
    const bool ok = IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '/' ||
                    c == '-' || c == '_' || c == '+';
    if (!ok || (c == '/' && previous == '/')) return nullptr;
    previous = c;
  }
  return FindZone(name);
}

// ---------------------------------------------------------------------------------------------
// Parsing.

struct Cursor {
  std::string_view text;
  std::size_t pos = 0;
  char At(std::size_t ahead = 0) const {
    return pos + ahead < text.size() ? text[pos + ahead] : '\0';
  }
  bool AtEnd() const { return pos >= text.size(); }
  void SkipSpaces() {
    while (At() == ' ') ++pos;
  }
};

constexpr std::array<std::pair<std::string_view, int>, 14> kWeekdayNames = {{
    {"Monday", 0},
    {"Mon", 0},
    {"Tuesday", 1},
    {"Tue", 1},
    {"Wednesday", 2},
    {"Wed", 2},
    {"Thursday", 3},
    {"Thu", 3},
    {"Friday", 4},
    {"Fri", 4},
    {"Saturday", 5},
    {"Sat", 5},
    {"Sunday", 6},
    {"Sun", 6},
}};

constexpr std::array<std::string_view, 7> kWeekdayShort = {"Mon", "Tue", "Wed", "Thu",
                                                           "Fri", "Sat", "Sun"};

class Parser {
 public:
  explicit Parser(std::string_view text) : cursor_{text} {}

  // Leading weekdays: `Mon`, `Mon,Wed`, `Mon..Fri`, `Mon-Fri`; none is fine.
  std::string Weekdays(int* bits) {
    int range_start = -1;
    bool first = true;
    while (true) {
      const std::string_view rest = cursor_.text.substr(cursor_.pos);
      int day = -1;
      std::size_t length = 0;
      for (const auto& [name, number] : kWeekdayNames) {
        if (StartsWithNoCase(rest, name)) {
          day = number;
          length = name.size();
          break;
        }
      }
      if (day < 0) return first ? std::string() : "expected a weekday after \",\"";
      const char after = length < rest.size() ? rest[length] : '\0';
      if (after != '\0' && after != '-' && after != '.' && after != ',' && after != ' ') {
        return fmt::format("unknown weekday \"{}\"", rest.substr(0, rest.find(' ')));
      }
      *bits |= 1 << day;
      if (range_start >= 0) {
        if (range_start > day) return "weekday range runs backwards";
        for (int d = range_start + 1; d < day; ++d) *bits |= 1 << d;
      }
      cursor_.pos += length;
      if (cursor_.AtEnd()) return {};
      if (cursor_.At() == ' ') {
        cursor_.SkipSpaces();
        return {};
      }
      if (cursor_.At() == '.') {
        if (range_start >= 0) return "a weekday range has one \"..\"";
        if (cursor_.At(1) != '.') return "expected \"..\" in a weekday range";
        range_start = day;
        cursor_.pos += 2;
      } else if (cursor_.At() == '-') {
        if (range_start >= 0) return "a weekday range has one \"-\"";
        range_start = day;
        cursor_.pos += 1;
      } else if (cursor_.At() == ',') {
        range_start = -1;
        cursor_.pos += 1;
      }
      if (cursor_.AtEnd() || cursor_.At() == ' ') {
        cursor_.SkipSpaces();
        if (range_start >= 0) return "weekday range has no end";
        return {};
      }
      first = false;
    }
  }

  // `@seconds`: one instant, in UTC. Returns false when the text does not start with '@'.
  bool Timestamp(CalendarSpec::Chain* year, CalendarSpec::Chain* month, CalendarSpec::Chain* day,
                 CalendarSpec::Chain* hour, CalendarSpec::Chain* minute, CalendarSpec::Chain* usec,
                 std::string* error) {
    if (cursor_.At() != '@') return false;
    ++cursor_.pos;
    // strtoul: blanks, then an optional sign.
    while (cursor_.At() == ' ' || (cursor_.At() >= '\t' && cursor_.At() <= '\r')) ++cursor_.pos;
    bool negative = false;
    if (cursor_.At() == '+' || cursor_.At() == '-') {
      negative = cursor_.At() == '-';
      ++cursor_.pos;
    }
    if (!IsDigit(cursor_.At())) {
      *error = "expected seconds since the epoch after \"@\"";
      return true;
    }
    std::int64_t value = 0;
    bool huge = false;
    while (IsDigit(cursor_.At())) {
      if (value > (std::int64_t{1} << 40)) huge = true;  // far past 2199 either way
      if (!huge) value = value * 10 + (cursor_.At() - '0');
      ++cursor_.pos;
    }
    if (huge || (negative && value != 0)) {
      *error = "the timestamp is outside 1970-2199";
      return true;
    }
    const CivilTime civil = CivilFromSeconds(value);
    *year = {{static_cast<int>(civil.year), -1, 0}};
    *month = {{civil.month, -1, 0}};
    *day = {{civil.day, -1, 0}};
    *hour = {{civil.hour, -1, 0}};
    *minute = {{civil.minute, -1, 0}};
    *usec = {{civil.second * kUsecPerSec, -1, 0}};
    return true;
  }

  // Date part: `[year-]month-day` or `[year-]month~day`, each a chain. Returns false (and moves
  // nothing) when the text is a time instead.
  std::string Date(CalendarSpec::Chain* year, CalendarSpec::Chain* month, CalendarSpec::Chain* day,
                   bool* end_of_month, bool* had_date) {
    *had_date = false;
    if (cursor_.AtEnd()) return {};
    const std::size_t start = cursor_.pos;
    CalendarSpec::Chain first, second, third;
    std::string error = Chain(false, &first, "date");
    if (!error.empty()) return error;
    if (cursor_.AtEnd() || cursor_.At() == ':') {
      cursor_.pos = start;  // a time, not a date
      return {};
    }
    if (cursor_.At() == '~') {
      *end_of_month = true;
    } else if (cursor_.At() != '-') {
      return fmt::format("unexpected \"{}\" in the date", cursor_.At());
    }
    ++cursor_.pos;
    error = Chain(false, &second, "date");
    if (!error.empty()) return error;
    if (cursor_.AtEnd() || cursor_.At() == ' ') {
      cursor_.SkipSpaces();
      *month = std::move(first);
      *day = std::move(second);
      *had_date = true;
      return {};
    }
    if (*end_of_month) return "\"~\" may only stand before the day";
    if (cursor_.At() == '~') {
      *end_of_month = true;
    } else if (cursor_.At() != '-') {
      return fmt::format("unexpected \"{}\" in the date", cursor_.At());
    }
    ++cursor_.pos;
    error = Chain(false, &third, "date");
    if (!error.empty()) return error;
    if (!cursor_.AtEnd() && cursor_.At() != ' ') {
      return fmt::format("unexpected \"{}\" after the date", cursor_.At());
    }
    cursor_.SkipSpaces();
    *year = std::move(first);
    *month = std::move(second);
    *day = std::move(third);
    *had_date = true;
    return {};
  }

  // Time part: `hour:minute[:second]`, or nothing for 00:00:00.
  std::string Time(CalendarSpec::Chain* hour, CalendarSpec::Chain* minute,
                   CalendarSpec::Chain* usec) {
    const CalendarSpec::Chain zero = {{0, -1, 0}};
    if (cursor_.AtEnd()) {
      *hour = *minute = *usec = zero;
      return {};
    }
    std::string error = Chain(false, hour, "hour");
    if (!error.empty()) return error;
    if (cursor_.At() != ':') return "expected \":\" after the hour";
    ++cursor_.pos;
    error = Chain(false, minute, "minute");
    if (!error.empty()) return error;
    if (cursor_.AtEnd()) {
      *usec = zero;
      return {};
    }
    if (cursor_.At() != ':') return "expected \":\" after the minute";
    ++cursor_.pos;
    error = Chain(true, usec, "second");
    if (!error.empty()) return error;
    if (!cursor_.AtEnd()) return fmt::format("unexpected \"{}\" after the seconds", cursor_.At());
    return {};
  }

  bool AtEnd() const { return cursor_.AtEnd(); }
  std::string_view Rest() const { return cursor_.text.substr(cursor_.pos); }

 private:
  // `*` or a comma-separated list of components.
  std::string Chain(bool usec, CalendarSpec::Chain* chain, std::string_view field) {
    chain->clear();
    if (cursor_.At() == '*') {
      ++cursor_.pos;
      if (usec) chain->push_back({0, -1, kUsecPerSec});
      return {};
    }
    while (true) {
      if (chain->size() >= kMaxComponents) {
        return fmt::format("more than {} items in the {} field", kMaxComponents, field);
      }
      CalendarSpec::Component component;
      std::string error = Decimal(usec, &component.start, field);
      if (!error.empty()) return error;
      if (cursor_.At() == '.' && cursor_.At(1) == '.') {
        cursor_.pos += 2;
        error = Decimal(usec, &component.stop, field);
        if (!error.empty()) return error;
        component.repeat = usec ? kUsecPerSec : 1;
      }
      if (cursor_.At() == '/') {
        ++cursor_.pos;
        error = Decimal(usec, &component.repeat, field);
        if (!error.empty()) return error;
        if (component.repeat == 0) return fmt::format("repetition 0 in the {} field", field);
      } else {
        if (component.start > INT_MAX - component.repeat) {
          return fmt::format("number too large in the {} field", field);
        }
        if (usec && component.stop >= 0 && component.start + component.repeat > component.stop) {
          return "a range of seconds shorter than a second needs a repetition";
        }
      }
      const char next = cursor_.At();
      if (next != '\0' && next != ' ' && next != ',' && next != '-' && next != '~' && next != ':') {
        return fmt::format("unexpected \"{}\" in the {} field", next, field);
      }
      chain->push_back(component);
      if (next != ',') return {};
      ++cursor_.pos;
    }
  }

  std::string Decimal(bool usec, int* out, std::string_view field) {
    if (!IsDigit(cursor_.At())) {
      if (cursor_.AtEnd()) return fmt::format("the {} field ends early", field);
      return fmt::format("expected a number in the {} field, got \"{}\"", field, cursor_.At());
    }
    std::int64_t value = 0;
    while (IsDigit(cursor_.At())) {
      value = value * 10 + (cursor_.At() - '0');
      if (value > INT_MAX) return fmt::format("number too large in the {} field", field);
      ++cursor_.pos;
    }
    if (usec) {
      value *= kUsecPerSec;
      if (cursor_.At() == '.' && cursor_.At(1) != '.') {
        ++cursor_.pos;
        if (!IsDigit(cursor_.At())) return "expected digits after the decimal point";
        std::int64_t fraction = 0;
        for (int digits = 0; digits < 6; ++digits) {
          fraction *= 10;
          if (IsDigit(cursor_.At())) fraction += cursor_.At() - '0', ++cursor_.pos;
        }
        if (cursor_.At() >= '5' && cursor_.At() <= '9') ++fraction;  // rounds at the 7th digit
        while (IsDigit(cursor_.At())) ++cursor_.pos;
        value += fraction;
      }
      if (value > INT_MAX) return fmt::format("number too large in the {} field", field);
    }
    *out = static_cast<int>(value);
    return {};
  }

  Cursor cursor_;
};

void NormalizeChain(CalendarSpec::Chain& chain) {
  for (auto& c : chain) {
    if (c.stop > c.start && c.repeat > 0) c.stop -= (c.stop - c.start) % c.repeat;
    // A repetition that never repeats, and a range of one value, are one value.
    if ((c.stop > c.start && c.repeat > 0 && c.start + c.repeat > c.stop) || c.start == c.stop) {
      c.repeat = 0;
      c.stop = -1;
    }
  }
  auto key = [](const CalendarSpec::Component& c) { return std::tie(c.start, c.stop, c.repeat); };
  std::sort(chain.begin(), chain.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  chain.erase(std::unique(chain.begin(), chain.end(),
                          [&](const auto& a, const auto& b) { return key(a) == key(b); }),
              chain.end());
}

std::string Shown(const CalendarSpec::Component& c, bool usec) {
  const int d = usec ? kUsecPerSec : 1;
  std::string out = fmt::format("{}", c.start / d);
  if (c.start % d > 0) out += fmt::format(".{:06}", c.start % d);
  if (c.stop >= 0) out += fmt::format("..{}", c.stop / d);
  if (c.stop > 0 && c.stop % d > 0) out += fmt::format(".{:06}", c.stop % d);
  if (c.repeat > 0) out += fmt::format("/{}", c.repeat / d);
  if (c.repeat % d > 0) out += fmt::format(".{:06}", c.repeat % d);
  return out;
}

// systemd's chain_valid, with a reason.
std::string CheckChain(const CalendarSpec::Chain& chain, std::string_view field, int from, int to,
                       bool end_of_month, bool usec) {
  for (const auto& c : chain) {
    // At most 28 days before the month's end; systemd takes 3 more days off for each further
    // item of the list (its check recurses with the reduced bound), so we do too.
    if (end_of_month) to -= 3;
    const std::string shown = Shown(c, usec);
    const int d = usec ? kUsecPerSec : 1;
    auto range = [&] {
      return usec ? fmt::format("{}-{}.999999", from / d, to / d) : fmt::format("{}-{}", from, to);
    };
    if (c.start < from || c.start > to) {
      return fmt::format("{} \"{}\" is out of range {}", field, shown, range());
    }
    if (c.repeat > to - from) {
      return fmt::format("{} \"{}\": the repetition is larger than the range {}", field, shown,
                         range());
    }
    if (c.stop >= 0) {
      if (c.stop < from || c.stop > to) {
        return fmt::format("{} \"{}\" is out of range {}", field, shown, range());
      }
      if (c.start + c.repeat > c.stop) {
        return fmt::format("{} \"{}\" never reaches its second value", field, shown);
      }
    } else if (end_of_month ? c.start - c.repeat < from : c.start + c.repeat > to) {
      return fmt::format("{} \"{}\" never reaches its second value", field, shown);
    }
  }
  return {};
}

void FormatChain(std::string& out, const CalendarSpec::Chain& chain, int width, bool usec) {
  const int d = usec ? kUsecPerSec : 1;
  if (chain.empty() || (usec && chain.size() == 1 && chain[0].start == 0 &&
                        chain[0].repeat == kUsecPerSec && chain[0].stop < 0)) {
    out += '*';
    return;
  }
  bool first = true;
  for (const auto& c : chain) {
    if (!first) out += ',';
    first = false;
    out += fmt::format("{:0{}}", c.start / d, width);
    if (c.start % d > 0) out += fmt::format(".{:06}", c.start % d);
    if (c.stop > 0) out += fmt::format("..{:0{}}", c.stop / d, width);
    if (c.stop > 0 && c.stop % d > 0) out += fmt::format(".{:06}", c.stop % d);
    if (c.repeat > 0 && !(c.stop > 0 && c.repeat == d)) out += fmt::format("/{}", c.repeat / d);
    if (c.repeat % d > 0) out += fmt::format(".{:06}", c.repeat % d);
  }
}

void FormatWeekdays(std::string& out, int bits) {
  bool need_comma = false;
  int run = -1;
  auto close = [&](int x) {
    if (run >= 0 && x > run + 1) {
      out += x > run + 2 ? ".." : ",";
      out += kWeekdayShort[x - 1];
    }
    run = -1;
  };
  for (int x = 0; x < 7; ++x) {
    if (bits & (1 << x)) {
      if (run < 0) {
        if (need_comma) out += ',';
        need_comma = true;
        out += kWeekdayShort[x];
        run = x;
      }
    } else if (run >= 0) {
      close(x);
    }
  }
  close(7);
}

// ---------------------------------------------------------------------------------------------
// Wall clock of a zone, the way mktime(3) and localtime(3) see it.

struct Tm {
  std::int64_t year;  // e.g. 2024
  std::int64_t mon;   // 0-11 once normalised
  std::int64_t mday;  // 1-31 once normalised
  std::int64_t hour, min, sec;
  int isdst = -1;  // as in struct tm: -1 lets mktime decide
};

class WallClock {
 public:
  explicit WallClock(const date::time_zone* zone) : zone_(zone) {}

  // localtime_r: the wall clock at `t`; remembers its offset as mktime's guess.
  Tm Local(std::int64_t t) {
    if (zone_ == nullptr) return Split(t);
    const date::sys_info at = InfoAt(t);
    guess_ = at.offset.count();
    Tm tm = Split(t + guess_);
    tm.isdst = at.save.count() != 0;
    return tm;
  }

  // mktime: normalises `tm` and returns its time. With tm.isdst = -1, a wall time the zone
  // repeats takes the offset of the previous call when that fits (glibc keeps it as its guess);
  // one the zone skips is read with the offset before the change, which lands past the gap.
  // With tm.isdst set and wrong for that wall time, glibc reads it with the offset of the
  // nearest stretch of time that has the requested isdst.
  std::int64_t Mktime(Tm& tm) {
    const std::int64_t local = LocalSeconds(tm);
    if (zone_ == nullptr) {
      tm = Split(local);
      tm.isdst = 0;
      return local;
    }
    std::int64_t offset = 0;
    const date::local_info info = zone_->get_info(date::local_seconds{std::chrono::seconds{local}});
    if (info.result == date::local_info::unique) {
      offset = info.first.offset.count();
    } else if (info.result == date::local_info::ambiguous) {
      offset = info.second.offset.count() == guess_ ? guess_ : info.first.offset.count();
    } else {
      offset = info.first.offset.count();
    }
    std::int64_t t = local - offset;
    date::sys_info at = InfoAt(t);
    if (tm.isdst >= 0 && (at.save.count() != 0) != (tm.isdst != 0)) {
      // glibc probes a week apart on each side, the earlier side first.
      constexpr std::int64_t kStride = 601200;
      const std::int64_t begin = at.begin.time_since_epoch().count();
      const std::int64_t end = at.end.time_since_epoch().count();
      const date::sys_info before = InfoAt(begin - 1);
      const date::sys_info after = InfoAt(end);
      const bool before_fits = (before.save.count() != 0) == (tm.isdst != 0) && begin > kMinSeconds;
      const bool after_fits = (after.save.count() != 0) == (tm.isdst != 0) && end < kMaxSeconds;
      const std::int64_t probes_back = (t - begin) / kStride + 1;
      const std::int64_t probes_ahead = (end - t + kStride - 1) / kStride;
      if (before_fits && (!after_fits || probes_back <= probes_ahead)) {
        t = local - before.offset.count();
      } else if (after_fits) {
        t = local - after.offset.count();
      }
      at = InfoAt(t);
    }
    guess_ = at.offset.count();
    tm = Split(t + guess_);
    tm.isdst = at.save.count() != 0;
    return t;
  }

  static std::int64_t LocalSeconds(const Tm& tm) {
    const std::int64_t months = tm.year * 12 + tm.mon;
    const std::int64_t year = FloorDiv(months, 12);
    const int month = static_cast<int>(months - year * 12) + 1;
    const std::int64_t days = DaysFromCivil(year, month, 1) + tm.mday - 1;
    return days * kSecondsPerDay + tm.hour * 3600 + tm.min * 60 + tm.sec;
  }

  static Tm Split(std::int64_t local) {
    const CivilTime civil = CivilFromSeconds(local);
    return {civil.year, civil.month - 1, civil.day, civil.hour, civil.minute, civil.second, -1};
  }

  // Monday = 0.
  static int Weekday(const Tm& tm) {
    const std::int64_t days = FloorDiv(LocalSeconds(tm), kSecondsPerDay);
    return static_cast<int>(((days + 3) % 7 + 7) % 7);  // 1970-01-01 was a Thursday
  }

 private:
  date::sys_info InfoAt(std::int64_t t) const {
    return zone_->get_info(date::sys_seconds{std::chrono::seconds{t}});
  }
  static constexpr std::int64_t kMinSeconds = -(std::int64_t{1} << 50);
  static constexpr std::int64_t kMaxSeconds = std::int64_t{1} << 50;

  const date::time_zone* zone_;
  std::int64_t guess_ = 0;
};

}  // namespace

// The search of systemd's find_next, on an emulated struct tm.
class CalendarStepper {
 public:
  CalendarStepper(const CalendarSpec& spec, const date::time_zone* zone)
      : spec_(spec), clock_(zone) {}

  // The earliest value >= *value that some component allows: -1 when none, 1 when it moved.
  static int Match(const CalendarSpec::Chain& chain, const Tm& c, std::int64_t* value,
                   bool end_of_month);

  std::optional<std::int64_t> Next(std::int64_t after_usec) {
    const std::int64_t usec = after_usec + 1;
    const std::int64_t start = FloorDiv(usec, kUsecPerSec);
    Tm c = clock_.Local(start);
    std::int64_t tm_usec = usec - start * kUsecPerSec;
    for (int step = 0; step < kMaxSteps; ++step) {
      clock_.Mktime(c);  // with the isdst a normalisation below left in c, as systemd does
      c.isdst = -1;

      int r = Match(spec_.year_, c, &c.year, false);
      if (r > 0) Reset(c, tm_usec, kMonth);
      if (r < 0 || WithinBounds(c) <= 0) return std::nullopt;

      std::int64_t month = c.mon + 1;
      r = Match(spec_.month_, c, &month, false);
      c.mon = month - 1;
      if (r > 0) Reset(c, tm_usec, kDay);
      if (r < 0 || (r = WithinBounds(c)) < 0) {
        ++c.year;
        Reset(c, tm_usec, kMonth);
        continue;
      }
      if (r == 0) continue;

      r = Match(spec_.day_, c, &c.mday, spec_.end_of_month_);
      if (r > 0) Reset(c, tm_usec, kHour);
      if (r < 0 || (r = WithinBounds(c)) < 0) {
        ++c.mon;
        Reset(c, tm_usec, kDay);
        continue;
      }
      if (r == 0) continue;

      if (spec_.weekdays_ >= 0 && !((spec_.weekdays_ >> WallClock::Weekday(c)) & 1)) {
        ++c.mday;
        Reset(c, tm_usec, kHour);
        continue;
      }

      r = Match(spec_.hour_, c, &c.hour, false);
      if (r > 0) Reset(c, tm_usec, kMinute);
      if (r < 0 || (r = WithinBounds(c)) < 0) {
        ++c.mday;
        Reset(c, tm_usec, kHour);
        continue;
      }
      if (r == 0) continue;

      r = Match(spec_.minute_, c, &c.min, false);
      if (r > 0) Reset(c, tm_usec, kSecond);
      if (r < 0 || (r = WithinBounds(c)) < 0) {
        ++c.hour;
        Reset(c, tm_usec, kMinute);
        continue;
      }
      if (r == 0) continue;

      std::int64_t second = c.sec * kUsecPerSec + tm_usec;
      r = Match(spec_.microsecond_, c, &second, false);
      tm_usec = second % kUsecPerSec;
      c.sec = second / kUsecPerSec;
      if (r < 0 || (r = WithinBounds(c)) < 0) {
        ++c.min;
        Reset(c, tm_usec, kSecond);
        continue;
      }
      if (r == 0) continue;

      const std::int64_t t = clock_.Mktime(c);
      if (t < 0) return std::nullopt;
      return t * kUsecPerSec + tm_usec;
    }
    return std::nullopt;  // systemd: "Infinite loop in calendar calculation"
  }

 private:
  enum Level { kMonth, kDay, kHour, kMinute, kSecond };

  static void Reset(Tm& c, std::int64_t& usec, Level from) {
    if (from <= kMonth) c.mon = 0;
    if (from <= kDay) c.mday = 1;
    if (from <= kHour) c.hour = 0;
    if (from <= kMinute) c.min = 0;
    c.sec = 0;
    usec = 0;
  }

  // systemd's tm_within_bounds: 1 when `c` is a real wall time, 0 when normalising moved it
  // forward (then `c` holds the normalised time, the unit below the one that moved reset), < 0
  // when it is past 2199, before 1970 or normalising moved it back.
  int WithinBounds(Tm& c) {
    if (c.year > kMaxYear) return -1;
    Tm t = c;
    if (clock_.Mktime(t) < 0) return -1;  // t keeps the isdst mktime found, and so may c
    int cmp = 0;
    auto compare = [](std::int64_t a, std::int64_t b) { return (a > b) - (a < b); };
    if ((cmp = compare(t.year, c.year)) != 0) {
      t.mon = 0;
    } else if ((cmp = compare(t.mon, c.mon)) != 0) {
      t.mday = 1;
    } else if ((cmp = compare(t.mday, c.mday)) != 0) {
      t.hour = 0;
    } else if ((cmp = compare(t.hour, c.hour)) != 0) {
      t.min = 0;
    } else if ((cmp = compare(t.min, c.min)) != 0) {
      t.sec = 0;
    } else {
      cmp = compare(t.sec, c.sec);
    }
    if (cmp < 0) return -1;
    if (cmp > 0) c = t;
    return cmp == 0;
  }

  const CalendarSpec& spec_;
  WallClock clock_;
};

int CalendarStepper::Match(const CalendarSpec::Chain& chain, const Tm& c, std::int64_t* value,
                           bool end_of_month) {
  if (chain.empty()) return 0;
  std::optional<std::int64_t> best;
  const std::int64_t months = c.year * 12 + c.mon;
  const std::int64_t year = FloorDiv(months, 12);
  const int length = DaysInMonth(year, static_cast<int>(months - year * 12) + 1);
  for (const auto& component : chain) {
    std::int64_t start = component.start;
    std::int64_t stop = component.stop;
    if (end_of_month) {  // counted back from the month's last day
      start = start >= 1 ? length + 1 - start : -1;
      stop = stop >= 1 ? length + 1 - stop : -1;
      if (stop > 0) std::swap(start, stop);
    }
    if (start >= *value) {
      if (!best || start < *best) best = start;
    } else if (component.repeat > 0) {
      const std::int64_t k =
          start + component.repeat * ((*value - start + component.repeat - 1) / component.repeat);
      if ((!best || k < *best) && (stop < 0 || k <= stop)) best = k;
    }
  }
  if (!best) return -1;
  const int moved = *value != *best;
  *value = *best;
  return moved;
}

Result<CalendarSpec> CalendarSpec::Parse(std::string_view text) {
  CalendarSpec spec;
  spec.text_ = std::string(text);
  auto fail = [&text](std::string_view why) { return Error{fmt::format("\"{}\": {}", text, why)}; };
  std::string_view body = text;
  // A last word that reads like an IANA name but is none gets its own message.
  const std::size_t last_space = text.rfind(' ');
  const std::string_view last_word =
      last_space == std::string_view::npos ? std::string_view() : text.substr(last_space + 1);
  auto fail_parse = [&](std::string_view why) {
    if (!last_word.empty() && std::isalpha(static_cast<unsigned char>(last_word[0])) &&
        last_word.find('/') != std::string_view::npos && ZoneNamed(last_word) == nullptr) {
      return fail(fmt::format("unknown time zone \"{}\"", last_word));
    }
    return fail(why);
  };
  if (body.size() >= 4 && EqualsNoCase(body.substr(body.size() - 4), " UTC")) {
    spec.utc_ = true;
    spec.zone_name_ = "UTC";
    body.remove_suffix(4);
  } else if (auto space = body.rfind(' '); space != std::string_view::npos) {
    const std::string_view name = body.substr(space + 1);
    if (const date::time_zone* zone = ZoneNamed(name)) {
      spec.zone_ = zone;
      spec.zone_name_ = std::string(name);
      body = body.substr(0, space);
      if (name == "UTC") {
        spec.utc_ = true;
        spec.zone_ = nullptr;
      }
    }
  }
  if (body.empty()) return fail("empty calendar expression");

  const Chain zero = {{0, -1, 0}};
  struct Shorthand {
    std::string_view name;
    Chain month, day;
    bool weekly, hour, minute;
  };
  const Shorthand shorthands[] = {
      {"minutely", {}, {}, false, false, false},
      {"hourly", {}, {}, false, false, true},
      {"daily", {}, {}, false, true, true},
      {"monthly", {}, {{1, -1, 0}}, false, true, true},
      {"weekly", {}, {}, true, true, true},
      {"yearly", {{1, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"annually", {{1, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"anually", {{1, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"quarterly",
       {{1, -1, 0}, {4, -1, 0}, {7, -1, 0}, {10, -1, 0}},
       {{1, -1, 0}},
       false,
       true,
       true},
      {"semiannually", {{1, -1, 0}, {7, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"semi-annually", {{1, -1, 0}, {7, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"biannually", {{1, -1, 0}, {7, -1, 0}}, {{1, -1, 0}}, false, true, true},
      {"bi-annually", {{1, -1, 0}, {7, -1, 0}}, {{1, -1, 0}}, false, true, true},
  };
  bool shorthand = false;
  for (const auto& s : shorthands) {
    if (!EqualsNoCase(body, s.name)) continue;
    shorthand = true;
    spec.month_ = s.month;
    spec.day_ = s.day;
    if (s.weekly) spec.weekdays_ = 1;
    if (s.hour) spec.hour_ = zero;
    if (s.minute) spec.minute_ = zero;
    spec.microsecond_ = zero;
  }
  if (!shorthand) {
    Parser parser(body);
    int weekdays = 0;
    std::string error = parser.Weekdays(&weekdays);
    if (!error.empty()) return fail_parse(error);
    if (weekdays != 0) spec.weekdays_ = weekdays;
    bool timestamp = parser.Timestamp(&spec.year_, &spec.month_, &spec.day_, &spec.hour_,
                                      &spec.minute_, &spec.microsecond_, &error);
    if (!error.empty()) return fail_parse(error);
    if (timestamp) {  // always UTC, whatever zone follows
      spec.utc_ = true;
      spec.zone_ = nullptr;
      spec.zone_name_ = "UTC";
    } else {
      bool had_date = false;
      error = parser.Date(&spec.year_, &spec.month_, &spec.day_, &spec.end_of_month_, &had_date);
      if (!error.empty()) return fail_parse(error);
      error = parser.Time(&spec.hour_, &spec.minute_, &spec.microsecond_);
      if (!error.empty()) return fail_parse(error);
    }
    if (!parser.AtEnd()) return fail_parse(fmt::format("unexpected \"{}\"", parser.Rest()));
  }

  // Normalise as systemd does, then check.
  if (spec.weekdays_ <= 0 || spec.weekdays_ >= kAllWeekdays) spec.weekdays_ = -1;
  if (spec.end_of_month_ && spec.day_.empty()) spec.end_of_month_ = false;
  for (auto& c : spec.year_) {  // 24 -> 2024, 89 -> 1989
    for (int* v : {&c.start, &c.stop}) {
      if (*v >= 0 && *v < 70) *v += 2000;
      if (*v >= 70 && *v < 100) *v += 1900;
    }
  }
  for (Chain* chain :
       {&spec.year_, &spec.month_, &spec.day_, &spec.hour_, &spec.minute_, &spec.microsecond_}) {
    NormalizeChain(*chain);
  }
  struct Check {
    const Chain& chain;
    std::string_view name;
    int from, to;
    bool end_of_month, usec;
  };
  const Check checks[] = {
      {spec.year_, "year", kMinYear, kMaxYear, false, false},
      {spec.month_, "month", 1, 12, false, false},
      {spec.day_, "day", 1, 31, spec.end_of_month_, false},
      {spec.hour_, "hour", 0, 23, false, false},
      {spec.minute_, "minute", 0, 59, false, false},
      {spec.microsecond_, "second", 0, 60 * kUsecPerSec - 1, false, true},
  };
  for (const auto& check : checks) {
    std::string error =
        CheckChain(check.chain, check.name, check.from, check.to, check.end_of_month, check.usec);
    if (!error.empty()) return fail(error);
  }

  std::string& out = spec.normalized_;
  if (spec.weekdays_ > 0) {
    FormatWeekdays(out, spec.weekdays_);
    out += ' ';
  }
  FormatChain(out, spec.year_, 4, false);
  out += '-';
  FormatChain(out, spec.month_, 2, false);
  out += spec.end_of_month_ ? '~' : '-';
  FormatChain(out, spec.day_, 2, false);
  out += ' ';
  FormatChain(out, spec.hour_, 2, false);
  out += ':';
  FormatChain(out, spec.minute_, 2, false);
  out += ':';
  FormatChain(out, spec.microsecond_, 2, true);
  if (spec.utc_) {
    out += " UTC";
  } else if (!spec.zone_name_.empty()) {
    out += ' ';
    out += spec.zone_name_;
  }
  return spec;
}

std::optional<std::int64_t> CalendarSpec::NextUsec(std::int64_t after_usec,
                                                   const date::time_zone* local) const {
  // systemd counts from the epoch and formats nothing past year 9999.
  constexpr std::int64_t kLastUsec = std::int64_t{253402300799} * kUsecPerSec;
  if (after_usec < -1 || after_usec >= kLastUsec) return std::nullopt;
  const date::time_zone* zone = utc_ ? nullptr : (zone_ != nullptr ? zone_ : local);
  return CalendarStepper(*this, zone).Next(after_usec);
}

std::vector<int> CalendarSpec::SecondsOfDay() const {
  auto allowed = [](const Chain& chain, int count, std::int64_t scale) {
    std::vector<int> values;
    const Tm any{2001, 0, 1, 0, 0, 0};
    for (int v = 0; v < count; ++v) {
      std::int64_t value = v * scale;
      if (CalendarStepper::Match(chain, any, &value, false) >= 0 && value < (v + 1) * scale) {
        values.push_back(v);
      }
    }
    return values;
  };
  std::vector<int> seconds_of_day;
  for (int h : allowed(hour_, 24, 1)) {
    for (int m : allowed(minute_, 60, 1)) {
      for (int s : allowed(microsecond_, 60, kUsecPerSec)) {
        seconds_of_day.push_back(h * 3600 + m * 60 + s);
      }
    }
  }
  return seconds_of_day;
}

}  // namespace schedwatch
