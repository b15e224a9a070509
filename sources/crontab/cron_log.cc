#include "sources/crontab/cron_log.h"

#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sources/crontab/crontab_file.h"

namespace schedwatch::crontab {
namespace {

constexpr std::size_t kQuotedBytes = 120;  // of a line, in a problem message

std::string Quote(std::string_view line) {
  std::string text = SanitizeUtf8(line.substr(0, kQuotedBytes));
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return line.size() > kQuotedBytes ? "\"" + text + "...\"" : "\"" + text + "\"";
}

bool Digits(std::string_view text, std::size_t from, std::size_t count, int* out) {
  if (from + count > text.size()) return false;
  int value = 0;
  for (std::size_t i = from; i < from + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    value = value * 10 + (text[i] - '0');
  }
  *out = value;
  return true;
}

std::optional<std::int64_t> CivilSeconds(int year, int month, int day, int hour, int minute,
                                         int second) {
  date::year_month_day ymd{date::year{year}, date::month{static_cast<unsigned>(month)},
                           date::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  return static_cast<std::int64_t>(date::sys_days(ymd).time_since_epoch().count()) * 86400 +
         hour * 3600 + minute * 60 + second;
}

// "2024-05-01T02:30:01.412907+02:00" (the fraction is optional, the offset may be Z).
std::optional<std::int64_t> ParseRsyslogTime(std::string_view text) {
  int year, month, day, hour, minute, second;
  if (text.size() < 20 || !Digits(text, 0, 4, &year) || text[4] != '-' ||
      !Digits(text, 5, 2, &month) || text[7] != '-' || !Digits(text, 8, 2, &day) ||
      (text[10] != 'T' && text[10] != 't') || !Digits(text, 11, 2, &hour) || text[13] != ':' ||
      !Digits(text, 14, 2, &minute) || text[16] != ':' || !Digits(text, 17, 2, &second)) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  if (text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
  }
  std::string_view zone = text.substr(pos);
  int offset = 0;
  if (zone != "Z" && zone != "z") {
    int offset_hours, offset_minutes;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':' ||
        !Digits(zone, 1, 2, &offset_hours) || !Digits(zone, 4, 2, &offset_minutes)) {
      return std::nullopt;
    }
    offset = (zone[0] == '-' ? -1 : 1) * (offset_hours * 3600 + offset_minutes * 60);
  }
  auto local = CivilSeconds(year, month, day, hour, minute, second);
  if (!local) return std::nullopt;
  return *local - offset;
}

bool ParsePid(std::string_view text, long* pid) {
  if (text.empty() || text.size() > 9) return false;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *pid = value;
  return value > 0;
}

// "[48211] command" -> 48211 and "command"; false when there is no "[N] ".
bool SplitJobPid(std::string_view detail, long* job_pid, std::string_view* command) {
  if (detail.empty() || detail.front() != '[') return false;
  std::size_t close = detail.find(']');
  if (close == std::string_view::npos || !ParsePid(detail.substr(1, close - 1), job_pid)) {
    return false;
  }
  *command = detail.substr(close + 1);
  return true;
}

std::string_view TrimBlanks(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

void AddPending(long pid, CronRun run, const CronLogOptions& options, CronLogState& state,
                CronLogBatch& batch) {
  if (auto same = state.pending.find(pid); same != state.pending.end()) {
    batch.problems.Add(Reason::kUnmatchedLine, [&] {
      return fmt::format("CRON[{}] started a run before its previous one ended", pid);
    });
    state.pending_by_start.erase({same->second.started, pid});
  } else if (state.pending.size() >= options.max_pending && !state.pending_by_start.empty()) {
    batch.problems.Add(Reason::kPendingOverflow, [&] {
      return fmt::format("more than {} runs without END; forgot the oldest", options.max_pending);
    });
    state.pending.erase(state.pending_by_start.begin()->second);
    state.pending_by_start.erase(state.pending_by_start.begin());
  }
  state.pending_by_start.emplace(run.started, pid);
  state.pending[pid] = std::move(run);
}

}  // namespace

void ApplyCronMessage(const CronMessage& message, const CronLogOptions& options,
                      CronLogState& state, CronLogBatch& batch) {
  std::string_view text = message.text;
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  // "(who) EVENT (detail)". Other messages of cron's child (pam_unix sessions) are not ours.
  if (text.empty() || text.front() != '(') return;
  std::size_t who_end = text.find(") ");
  std::size_t event_end = who_end == std::string_view::npos ? who_end : text.find(' ', who_end + 2);
  if (event_end == std::string_view::npos || text.size() < event_end + 3 ||
      text[event_end + 1] != '(' || text.back() != ')') {
    batch.problems.Add(Reason::kGarbledLine, [&] { return "cron message " + Quote(message.text); });
    return;
  }
  std::string_view who = text.substr(1, who_end - 1);
  std::string_view event = text.substr(who_end + 2, event_end - who_end - 2);
  std::string_view detail = text.substr(event_end + 2, text.size() - event_end - 3);

  if (event == "CMD") {
    CronRun run;
    run.user = std::string(who);
    run.started = message.time;
    std::string_view command;
    if (!SplitJobPid(detail, &run.job_pid, &command)) {
      run.command = std::string(TrimBlanks(detail));
      batch.started_only.push_back(std::move(run));
      batch.problems.Add(Reason::kCronLogLevel, [] {
        return std::string(
            "CMD line without a job PID: run cron with -L 15 to see ends and "
            "failures");
      });
      return;
    }
    run.command = std::string(TrimBlanks(command));
    AddPending(message.pid, std::move(run), options, state, batch);
    return;
  }
  bool end = event == "END";
  bool error = who == "CRON" && event == "error";
  if (!end && !error) return;  // info, MAIL, RELOAD...: nothing about a run's outcome

  long job_pid = 0;
  std::string_view command;
  bool has_pid = end ? SplitJobPid(detail, &job_pid, &command)
                     : detail.rfind("grandchild #", 0) == 0 &&
                           ParsePid(detail.substr(12, detail.find(' ', 12) - 12), &job_pid);
  if (!has_pid) {
    if (end) {
      batch.problems.Add(Reason::kCronLogLevel, [] {
        return std::string("END line without a job PID: run cron with -L 15");
      });
    } else {
      batch.problems.Add(Reason::kGarbledLine, [&] { return "cron error " + Quote(message.text); });
    }
    return;
  }
  auto it = state.pending.find(message.pid);
  if (it == state.pending.end() || it->second.job_pid != job_pid) {
    batch.problems.Add(Reason::kUnmatchedLine, [&] {
      return fmt::format(
          "CRON[{}] {} for job {} with no CMD line before it (started before the "
          "log was read?)",
          message.pid, end ? "END" : "error", job_pid);
    });
    return;
  }
  if (error) {
    it->second.failed = true;
    return;
  }
  it->second.finished = message.time;
  state.pending_by_start.erase({it->second.started, it->first});
  batch.finished.push_back(std::move(it->second));
  state.pending.erase(it);
}

std::optional<std::int64_t> ParseSyslogTime(std::string_view text, std::int64_t now,
                                            const date::time_zone* zone) {
  static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
  int day, hour, minute, second;
  std::size_t month = kMonths.find(text.substr(0, 3));
  if (text.size() != 15 || month == std::string_view::npos || month % 3 != 0 || text[3] != ' ' ||
      !Digits(text, 5, 1, &day) || (text[4] != ' ' && !Digits(text, 4, 2, &day)) ||
      text[6] != ' ' || !Digits(text, 7, 2, &hour) || text[9] != ':' ||
      !Digits(text, 10, 2, &minute) || text[12] != ':' || !Digits(text, 13, 2, &second)) {
    return std::nullopt;
  }
  using std::chrono::seconds;
  auto local_of = [zone](std::int64_t instant) -> std::int64_t {
    date::sys_seconds sys{seconds(instant)};
    if (zone == nullptr) return instant;
    return zone->to_local(sys).time_since_epoch().count();
  };
  auto to_sys = [zone](std::int64_t local) -> std::int64_t {
    if (zone == nullptr) return local;
    date::local_seconds time{seconds(local)};
    // In a repeated hour the first of the two; in a skipped one, the offset before the jump.
    return local - zone->get_info(time).first.offset.count();
  };
  auto local_now = date::floor<date::days>(date::local_seconds{seconds(local_of(now))});
  int year = static_cast<int>(date::year_month_day(local_now).year());
  for (int candidate : {year + 1, year, year - 1}) {
    auto local =
        CivilSeconds(candidate, static_cast<int>(month / 3) + 1, day, hour, minute, second);
    if (local && to_sys(*local) <= now + 86400) return to_sys(*local);
  }
  return std::nullopt;
}

std::size_t ParseSyslog(std::string_view text, const CronLogOptions& options, CronLogState& state,
                        CronLogBatch& batch) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const char* start = text.data() + pos;
    const void* newline = std::memchr(start, '\n', text.size() - pos);
    std::size_t length = newline ? static_cast<const char*>(newline) - start : text.size() - pos;
    if (state.in_long_line) {
      pos += newline ? length + 1 : length;
      state.in_long_line = newline == nullptr;
      continue;
    }
    std::string_view line(start, length);
    if (length > options.max_line_bytes) {
      if (line.substr(0, 200).find(" CRON[") != std::string_view::npos) {
        batch.problems.Add(Reason::kGarbledLine, [&] {
          return fmt::format("cron line longer than {} bytes skipped: {}", options.max_line_bytes,
                             Quote(line));
        });
      }
      pos += newline ? length + 1 : length;
      state.in_long_line = newline == nullptr;
      continue;
    }
    if (!newline) break;  // the rest of this line has not been written yet
    pos += length + 1;

    // "<time> <host> CRON[pid]: <message>"; the time is RFC 3339 or "Mmm dd hh:mm:ss".
    std::size_t time_end = !line.empty() && line[0] >= '0' && line[0] <= '9' ? line.find(' ') : 15;
    if (time_end == std::string_view::npos || time_end >= line.size() || line[time_end] != ' ') {
      continue;
    }
    std::size_t host_end = line.find(' ', time_end + 1);
    if (host_end == std::string_view::npos) continue;
    std::string_view tag = line.substr(host_end + 1);
    if (tag.substr(0, 5) != "CRON[") continue;  // another program, or cron's daemon
    std::size_t tag_end = tag.find("]: ");
    CronMessage message;
    std::string_view time_text = line.substr(0, time_end);
    auto time = time_text.size() == 15 && !(time_text[0] >= '0' && time_text[0] <= '9')
                    ? ParseSyslogTime(time_text, options.now, options.zone)
                    : ParseRsyslogTime(time_text);
    if (tag_end == std::string_view::npos || !ParsePid(tag.substr(5, tag_end - 5), &message.pid) ||
        !time) {
      batch.problems.Add(Reason::kGarbledLine, [&] { return "cron line " + Quote(line); });
      continue;
    }
    message.time = *time;
    message.text = tag.substr(tag_end + 3);
    ApplyCronMessage(message, options, state, batch);
  }
  return pos;
}

std::size_t ParseJournalJson(std::string_view text, const CronLogOptions& options,
                             CronLogState& state, CronLogBatch& batch, std::string* cursor) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) break;
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() > options.max_line_bytes) {
      batch.problems.Add(Reason::kGarbledLine, [&] {
        return fmt::format("journal entry longer than {} bytes skipped", options.max_line_bytes);
      });
      continue;
    }
    if (line.empty()) continue;
    auto entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    auto field = [&entry](const char* name) -> std::optional<std::string> {
      auto it = entry.find(name);
      if (it == entry.end()) return std::nullopt;
      if (it->is_string()) return it->get<std::string>();
      // journalctl writes a value that is not printable UTF-8 as an array of its bytes.
      if (!it->is_array()) return std::nullopt;
      std::string bytes;
      for (const auto& byte : *it) {
        if (!byte.is_number_unsigned() || byte.get<unsigned>() > 255) return std::nullopt;
        bytes += static_cast<char>(byte.get<unsigned>());
      }
      return bytes;
    };
    if (!entry.is_object()) {
      batch.problems.Add(Reason::kGarbledLine, [&] { return "journal line " + Quote(line); });
      continue;
    }
    if (auto next = field("__CURSOR")) *cursor = *next;
    auto identifier = field("SYSLOG_IDENTIFIER");
    if (identifier && *identifier != "CRON") continue;
    auto message_text = field("MESSAGE");
    auto pid_text = field("SYSLOG_PID");
    auto realtime = field("__REALTIME_TIMESTAMP");
    CronMessage message;
    long long microseconds = 0;
    bool time_ok = realtime && !realtime->empty() && realtime->size() < 19 &&
                   std::all_of(realtime->begin(), realtime->end(),
                               [](char c) { return c >= '0' && c <= '9'; });
    if (time_ok) microseconds = std::stoll(*realtime);
    if (!identifier || !message_text || !pid_text || !time_ok ||
        !ParsePid(*pid_text, &message.pid)) {
      batch.problems.Add(Reason::kGarbledLine, [&] { return "journal entry " + Quote(line); });
      continue;
    }
    message.time = microseconds / 1000000;
    message.text = *message_text;
    ApplyCronMessage(message, options, state, batch);
  }
  return pos;
}

}  // namespace schedwatch::crontab
