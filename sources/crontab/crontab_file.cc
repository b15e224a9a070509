#include "sources/crontab/crontab_file.h"

#include <fmt/format.h>
#include <pwd.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sources/marker.h"

namespace schedwatch::crontab {
namespace {

constexpr std::size_t kMaxEnvLineBytes = 999;  // cron reads environment lines into 1000 bytes
constexpr std::size_t kMaxNumberChars = 99;    // get_number's MAX_TEMPSTR buffer

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view SkipBlanks(std::string_view text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  return text;
}

// A reader over one line that answers '\n' at its end, like cron's get_char on the file.
class LineReader {
 public:
  explicit LineReader(std::string_view line) : line_(line) {}
  char Peek() const { return pos_ < line_.size() ? line_[pos_] : '\n'; }
  void Next() { ++pos_; }
  std::size_t pos() const { return pos_; }
  std::string_view Rest() const { return pos_ < line_.size() ? line_.substr(pos_) : ""; }
  std::string_view Slice(std::size_t from) const { return line_.substr(from, pos_ - from); }
  void SkipBlanks() {
    while (IsBlank(Peek())) Next();
  }
  void SkipNonblanks() {
    while (!IsBlank(Peek()) && Peek() != '\n') Next();
  }

 private:
  std::string_view line_;
  std::size_t pos_ = 0;
};

struct FieldRule {
  const char* name;
  int low, high;
  const std::vector<const char*>* names;
};

const std::vector<const char*> kMonthNames = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
const std::vector<const char*> kDayNames = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
const std::array<FieldRule, 5> kFieldRules = {{{"minute", 0, 59, nullptr},
                                               {"hour", 0, 23, nullptr},
                                               {"day-of-month", 1, 31, nullptr},
                                               {"month", 1, 12, &kMonthNames},
                                               {"day-of-week", 0, 7, &kDayNames}}};

// cron's get_number: alphanumerics that are a name of the field or all digits.
bool GetNumber(LineReader& in, int low, const std::vector<const char*>* names, std::int64_t* out) {
  std::string word;
  bool all_digits = true;
  while (IsAlnum(in.Peek())) {
    if (word.size() >= kMaxNumberChars) return false;
    all_digits = all_digits && in.Peek() >= '0' && in.Peek() <= '9';
    word += in.Peek();
    in.Next();
  }
  if (word.empty()) return false;
  if (names != nullptr) {
    for (std::size_t i = 0; i < names->size(); ++i) {
      if (strcasecmp((*names)[i], word.c_str()) == 0) {
        *out = static_cast<std::int64_t>(i) + low;
        return true;
      }
    }
  }
  if (!all_digits) return false;
  std::int64_t value = 0;
  for (char c : word) value = std::min<std::int64_t>(value * 10 + (c - '0'), INT32_MAX + 1LL);
  *out = value;
  return true;
}

// cron's get_range: `*`, `n`, `a-b`, each of the first and last with an optional `/step`.
bool GetRange(LineReader& in, const FieldRule& rule) {
  std::int64_t first, last, step = 1;
  if (in.Peek() == '*') {
    first = rule.low;
    last = rule.high;
    in.Next();
  } else {
    if (!GetNumber(in, rule.low, rule.names, &first)) return false;
    if (in.Peek() != '-') {
      // Debian rejects a step after a single number ("5/10").
      return in.Peek() != '/' && first >= rule.low && first <= rule.high;
    }
    in.Next();
    if (!GetNumber(in, rule.low, rule.names, &last)) return false;
  }
  if (in.Peek() == '/') {
    in.Next();
    if (!GetNumber(in, 0, nullptr, &step) || step <= 0) return false;
  }
  for (std::int64_t i = first; i <= last; i += step) {
    if (i < rule.low || i > rule.high) return false;
  }
  return true;
}

// cron's get_list: ranges separated by commas; anything else up to the next blank is skipped.
bool GetList(LineReader& in, const FieldRule& rule, std::string* text) {
  std::size_t start = in.pos();
  while (true) {
    if (!GetRange(in, rule)) return false;
    if (in.Peek() != ',') break;
    in.Next();
  }
  in.SkipNonblanks();
  *text = std::string(in.Slice(start));
  in.SkipBlanks();
  return true;
}

const std::vector<std::string_view> kMacros = {"reboot", "yearly", "annually", "monthly",
                                               "weekly", "daily",  "midnight", "hourly"};

bool IsCommentOrBlank(std::string_view line) {
  line = SkipBlanks(line);
  return line.empty() || line.front() == '#';
}

// "# schedwatch: role=retry spec_version=7": a comment whose text is a marker.
std::optional<Result<Marker>> ParseMarkerComment(std::string_view comment) {
  return ParseMarker(SkipBlanks(comment).substr(1));
}

}  // namespace

UserTable UserTable::System() {
  UserTable table;
  table.mode_ = Mode::kSystem;
  return table;
}

UserTable UserTable::FromPasswd(std::string_view text) {
  UserTable table;
  table.mode_ = Mode::kTable;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    std::size_t name_end = line.find(':');
    std::size_t password_end = line.find(':', name_end + 1);
    if (name_end == std::string_view::npos || password_end == std::string_view::npos) continue;
    std::string_view uid = line.substr(password_end + 1);
    uid = uid.substr(0, uid.find(':'));
    long value = 0;
    bool digits = !uid.empty() && uid.size() < 10;
    for (char c : uid) {
      digits = digits && c >= '0' && c <= '9';
      if (!digits) break;  // not a uid: stop before a long field overflows `value`
      value = value * 10 + (c - '0');
    }
    if (digits) table.uids_.emplace(line.substr(0, name_end), value);
  }
  return table;
}

std::optional<long> UserTable::Uid(const std::string& name) const {
  std::optional<long> uid = Find(name);
  if (asked_ != nullptr) asked_->emplace_back(name, uid.has_value());
  return uid;
}

bool UserTable::AnswersAsBefore(const Lookups& asked) const {
  return std::all_of(asked.begin(), asked.end(), [this](const auto& lookup) {
    return Find(lookup.first).has_value() == lookup.second;
  });
}

std::optional<long> UserTable::Find(const std::string& name) const {
  switch (mode_) {
    case Mode::kAcceptAll:
      return -1;
    case Mode::kSystem: {
      struct passwd entry {};
      struct passwd* found = nullptr;
      std::array<char, 4096> buffer{};
      if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || !found) {
        return std::nullopt;
      }
      return static_cast<long>(found->pw_uid);
    }
    case Mode::kTable:
      if (auto it = uids_.find(name); it != uids_.end()) return it->second;
      return std::nullopt;
  }
  return std::nullopt;
}

Result<CrontabEntry> ParseCronEntry(std::string_view line, CrontabKind kind,
                                    const UserTable* users) {
  if (line.find('\0') != std::string_view::npos) return Error{"bad minute"};  // as cron answers
  LineReader in(SkipBlanks(line));
  CrontabEntry entry;
  if (in.Peek() == '@') {
    std::size_t start = in.pos();
    in.SkipNonblanks();
    std::string_view macro = in.Slice(start).substr(1);
    if (std::find(kMacros.begin(), kMacros.end(), macro) == kMacros.end()) {
      return Error{"bad time specifier"};
    }
    entry.schedule = std::string(in.Slice(start));
    in.SkipBlanks();
  } else {
    for (const FieldRule& rule : kFieldRules) {
      std::string field;
      if (!GetList(in, rule, &field)) return Error{fmt::format("bad {}", rule.name)};
      if (!entry.schedule.empty()) entry.schedule += ' ';
      entry.schedule += field;
    }
  }
  if (kind == CrontabKind::kSystem) {
    std::size_t start = in.pos();
    in.SkipNonblanks();
    entry.user = std::string(in.Slice(start));
    // The user must be followed by a blank (which cron takes as the separator) and exist.
    if (entry.user.empty() || in.Peek() == '\n') return Error{"bad username"};
    if (users != nullptr && !users->Uid(entry.user)) return Error{"bad username"};
    in.Next();
  }
  entry.command = std::string(in.Rest());
  if (entry.command.size() > kMaxCommandBytes) return Error{"command too long"};
  return entry;
}

bool ParseEnvironmentLine(std::string_view line, std::string* name, std::string* value) {
  // cron's load_env, state by state.
  enum State { kNameStart, kName, kBeforeEquals, kAfterEquals, kValueStart, kValue, kDone, kError };
  line = SkipBlanks(line).substr(0, kMaxEnvLineBytes);
  line = line.substr(0, line.find('\n'));
  State state = kNameStart;
  char quote = 0;
  std::string parsed[2];
  std::string* out = &parsed[0];
  std::size_t i = 0;
  while (state != kError && i < line.size() && line[i] != '\0') {
    char c = line[i];
    switch (state) {
      case kNameStart:
      case kValueStart:
        if (c == '\'' || c == '"') {
          quote = c;
          ++i;
        }
        state = static_cast<State>(state + 1);
        break;
      case kName:
      case kValue:
        if (quote) {
          if (c == quote) {
            state = static_cast<State>(state + 1);
            ++i;
            break;
          }
          if (state == kName && c == '=') {
            state = kError;
            break;
          }
        } else if (state == kName) {
          if (IsSpace(c)) {
            ++i;
            state = kBeforeEquals;
            break;
          }
          if (c == '=') {
            state = kBeforeEquals;
            break;
          }
        }
        *out += c;
        ++i;
        break;
      case kBeforeEquals:
        if (c == '=') {
          state = kAfterEquals;
          out = &parsed[1];
          quote = 0;
        } else if (!IsSpace(c)) {
          state = kError;
        }
        ++i;
        break;
      case kAfterEquals:
      case kDone:
        if (IsSpace(c)) {
          ++i;
        } else {
          state = static_cast<State>(state + 1);
        }
        break;
      case kError:
        break;
    }
  }
  if (state != kDone && !(state == kValue && !quote)) return false;
  if (state == kValue) {
    while (!parsed[1].empty() && IsSpace(parsed[1].back())) parsed[1].pop_back();
  }
  if (name != nullptr) *name = parsed[0];
  if (value != nullptr) *value = parsed[1];
  return true;
}

ParsedCrontab ParseCrontab(std::string_view text, CrontabKind kind, const std::string& owner,
                           const UserTable* users) {
  ParsedCrontab parsed;
  std::vector<std::string_view> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (!text.empty() && text.back() != '\n' && !IsCommentOrBlank(lines.back())) {
    parsed.ignored_because = "missing newline before EOF";
    return parsed;
  }
  if (int line = FirstInvalidUtf8Line(text)) {
    parsed.problems.push_back(
        {line, Reason::kNonUtf8Crontab,
         fmt::format("line {}: not valid UTF-8; read as bytes, as cron does", line)});
  }

  struct PendingMarker {
    Marker marker;
    int line;
  };
  std::optional<PendingMarker> pending;  // the marker on the previous line
  auto unmatched = [&parsed](const PendingMarker& above, const std::string& why) {
    parsed.problems.push_back(
        {above.line, Reason::kMarkerWithoutEntry,
         fmt::format("line {}: marker for role \"{}\" {}", above.line, above.marker.role, why)});
  };
  auto entry_found = [&](CrontabEntry& entry, int line, std::optional<PendingMarker> above) {
    entry.line = line;
    if (kind == CrontabKind::kUser) entry.user = owner;
    if (above) {
      entry.role = std::move(above->marker.role);
      entry.spec_version = std::move(above->marker.spec_version);
    }
    parsed.entries.push_back(std::move(entry));
  };
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const int number = static_cast<int>(index) + 1;
    std::string_view line = SkipBlanks(lines[index]);
    std::optional<PendingMarker> above = std::exchange(pending, std::nullopt);
    if (line.empty()) {
      if (above) unmatched(*above, "is followed by a blank line");
      continue;
    }
    if (line.front() == '#') {
      if (auto found = ParseMarkerComment(line)) {
        if (above) unmatched(*above, "is followed by another marker");
        if (found->ok()) {
          pending = PendingMarker{found->value(), number};
        } else {
          parsed.problems.push_back({number, Reason::kMalformedMarker,
                                     fmt::format("line {}: {}", number, found->error())});
        }
        continue;
      }
      if (!above) continue;
      // A commented-out entry under a marker: the role's disabled object.
      auto disabled = ParseCronEntry(SkipBlanks(line.substr(1)), kind, users);
      if (!disabled) {
        unmatched(*above,
                  fmt::format("is followed by a comment that is no entry ({})", disabled.error()));
        continue;
      }
      disabled->enabled = false;
      entry_found(*disabled, number, std::move(above));
      continue;
    }
    std::string name, value;
    bool environment =
        line.find('\0') == std::string_view::npos && ParseEnvironmentLine(line, &name, &value);
    Result<CrontabEntry> entry =
        environment ? Result<CrontabEntry>(Error{""}) : ParseCronEntry(line, kind, users);
    if (!environment && !entry) {
      parsed.ignored_because = fmt::format("line {}: {}", number, entry.error());
      break;
    }
    if (number > kMaxCrontabLines) {
      parsed.ignored_because = fmt::format(
          "line {}: crontab must not be longer than 10000 lines (cron allows 10,003: the limit "
          "and crontab(1)'s 3 header lines)",
          number);
      break;
    }
    if (environment) {
      if (above) unmatched(*above, "is followed by an environment line");
      parsed.environment.emplace_back(std::move(name), std::move(value));
      continue;
    }
    entry_found(*entry, number, std::move(above));
  }
  if (pending && parsed.ignored_because.empty()) unmatched(*pending, "ends the file");
  if (!parsed.ignored_because.empty()) {
    parsed.entries.clear();
    parsed.environment.clear();
  }
  return parsed;
}

std::string LoggedCommand(std::string_view command) {
  std::string unescaped;
  bool escaped = false;
  for (char c : command) {
    if (escaped) {
      if (c != '%' && c != '\\') unescaped += '\\';
      unescaped += c;
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '%') {
      break;
    } else {
      unescaped += c;
    }
  }
  if (escaped) unescaped += '\\';
  std::size_t first = unescaped.find_first_not_of(" \t");
  std::size_t last = unescaped.find_last_not_of(" \t");
  if (first == std::string::npos) return "";
  std::string out;
  for (char c : std::string_view(unescaped).substr(first, last - first + 1)) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20) {
      out += '^';
      out += static_cast<char>(byte + '@');
    } else if (byte == 0x7f) {
      out += "^?";
    } else if (byte > 0x7f) {
      out += fmt::format("\\{:03o}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// Length of the valid UTF-8 sequence at text[i], or 0.
std::size_t Utf8SequenceLength(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (lead > 0xf4 || length == 0 || i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  unsigned char second = byte(i + 1);
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f) ||
      (lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second > 0x8f)) {
    return 0;  // overlong, surrogate or beyond U+10FFFF
  }
  return length;
}

}  // namespace

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i]));
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

int FirstInvalidUtf8Line(std::string_view text) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '\n') ++line;
    std::size_t length = Utf8SequenceLength(text, i);
    if (length == 0) return line;
    i += length;
  }
  return 0;
}

}  // namespace schedwatch::crontab
