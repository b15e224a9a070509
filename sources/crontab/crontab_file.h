// One crontab file read the way Debian's cron 3.0pl1-162 reads it, plus the schedwatch markers.
// Pure: text in, entries and problems out. The rules were measured against the real daemon:
//
// - A line whose first non-blank character is '#' is a comment; blank lines are skipped.
// - `NAME=value` lines set the environment (cron's env.c state machine: `MAILTO=""` is one,
//   a bare `MAILTO=` is not, and becomes a syntax error).
// - Fields: numbers, names (3 letters, any case, also in ranges: `jan-mar`), `*`, ranges, lists,
//   steps after `*` or a range (`5/10` is an error), `*/61` is allowed; a range that runs
//   backwards (`mon-sun`) is empty but valid. Macros are lower case: `@daily`.
// - A system crontab's user must exist; the command may be at most 998 bytes.
// - The whole file is ignored when it has a syntax error anywhere, lacks a final newline, or has
//   an entry or environment line after line 10,003 (the 10,000-line limit plus the 3 header
//   lines crontab(1) writes; trailing comments do not count).
//
// Markers tie an entry to a role: `# schedwatch: role=retry spec_version=7` on the line just
// above it. A commented-out entry under a marker is a disabled object; entries without a marker
// are not schedwatch's business.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"
#include "sources/problems.h"

namespace schedwatch::crontab {

enum class CrontabKind {
  kSystem,  // /etc/crontab, /etc/cron.d/*: a user field after the schedule
  kUser,    // /var/spool/cron/crontabs/<user>: no user field; the file name is the user
};

inline constexpr int kMaxCrontabLines = 10003;
inline constexpr std::size_t kMaxCommandBytes = 998;

// Which user names exist, and their uids. Cron refuses a system crontab naming an unknown user.
class UserTable {
 public:
  static UserTable System();                            // getpwnam, like cron itself
  static UserTable FromPasswd(std::string_view);        // a rooted tree's etc/passwd
  static UserTable AcceptAll() { return UserTable(); }  // nothing to check against
  // nullopt: no such user. AcceptAll answers -1 for every name (owner checks then skipped).
  std::optional<long> Uid(const std::string& name) const;

  // Every name Uid is asked from now on goes into `asked`, with whether it was found: what a
  // parse read of the users (null: stop noting).
  using Lookups = std::vector<std::pair<std::string, bool>>;
  void NoteLookups(Lookups* asked) { asked_ = asked; }
  // Whether each name still answers as noted.
  bool AnswersAsBefore(const Lookups& asked) const;

 private:
  enum class Mode { kAcceptAll, kSystem, kTable };
  std::optional<long> Find(const std::string& name) const;

  Mode mode_ = Mode::kAcceptAll;
  std::map<std::string, long, std::less<>> uids_;
  Lookups* asked_ = nullptr;
};

struct CrontabEntry {
  int line = 0;          // 1-based
  std::string schedule;  // fields joined by one blank ("*/10 * * * *") or the macro ("@daily")
  std::string user;      // the user field, or the owner of a user crontab
  std::string command;   // the bytes cron stores (before its '%' processing)
  bool enabled = true;   // false: commented out under a marker
  std::string role;      // from the marker above; empty when unmarked
  std::string spec_version;
};

struct CrontabProblem {
  int line = 0;
  Reason reason = Reason::kMalformedMarker;  // or kMarkerWithoutEntry, kNonUtf8Crontab
  std::string message;
};

struct ParsedCrontab {
  // Why cron ignores the whole file ("line 3: bad minute"); empty when cron loads it.
  std::string ignored_because;
  std::vector<CrontabEntry> entries;  // active entries, and disabled ones under a marker
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<CrontabProblem> problems;
};

// `owner` is the user of a kUser crontab (its file name). `users` may be null (accept all).
ParsedCrontab ParseCrontab(std::string_view text, CrontabKind kind, const std::string& owner,
                           const UserTable* users);

// One line (no newline, leading blanks allowed) as cron's load_entry reads it. The error is
// cron's own wording: "bad minute", "bad username", "command too long".
Result<CrontabEntry> ParseCronEntry(std::string_view line, CrontabKind kind,
                                    const UserTable* users);

// Whether cron takes the line for an environment setting, and which.
bool ParseEnvironmentLine(std::string_view line, std::string* name, std::string* value);

// The command as cron writes it in its CMD and END log lines: the text before the first
// unescaped '%' with "\%" and "\\" unescaped, control characters as ^X, DEL as ^?, bytes above
// 0x7f as \ooo (cron's mkprint), then blanks trimmed at both ends.
std::string LoggedCommand(std::string_view command);

// Escapes bytes that are not valid UTF-8 as \xNN so names can go into labels and JSON.
std::string SanitizeUtf8(std::string_view text);
// The 1-based line of the first invalid UTF-8 sequence, or 0.
int FirstInvalidUtf8Line(std::string_view text);

}  // namespace schedwatch::crontab
