#include "sources/run_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "schedwatch/platform/file.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

constexpr double kMaxTime = 253402300799;  // 9999-12-31T23:59:59Z

bool ValidRole(std::string_view role) {
  if (role.empty() || role.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(role[0]))) return false;
  return std::all_of(role.begin(), role.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

std::optional<RunRecord::State> StateFromName(std::string_view name) {
  if (name == "running") return RunRecord::State::kRunning;
  if (name == "finished") return RunRecord::State::kFinished;
  if (name == "skipped") return RunRecord::State::kSkipped;
  if (name == "not_run") return RunRecord::State::kNotRun;
  return std::nullopt;
}

std::int64_t Seconds(double time) { return static_cast<std::int64_t>(std::floor(time)); }

}  // namespace

std::string_view RunStateName(RunRecord::State state) {
  switch (state) {
    case RunRecord::State::kRunning:
      return "running";
    case RunRecord::State::kFinished:
      return "finished";
    case RunRecord::State::kSkipped:
      return "skipped";
    case RunRecord::State::kNotRun:
      return "not_run";
  }
  return "running";
}

std::string RenderRunRecord(const RunRecord& given) {
  // Times to the microsecond, and the duration from the rounded times: what a reader computes.
  RunRecord record = given;
  record.start = std::round(record.start * 1e6) / 1e6;
  if (record.end) record.end = std::round(*record.end * 1e6) / 1e6;
  nlohmann::ordered_json json;
  json["format"] = kRunRecordFormat;
  json["role"] = record.role;
  json["state"] = RunStateName(record.state);
  json["host"] = record.host;
  json["pid"] = record.pid;
  json["start"] = record.start;
  if (record.end) {
    json["end"] = *record.end;
    json["duration_seconds"] = *record.Duration();
  }
  if (record.exit_code) json["exit_code"] = *record.exit_code;
  if (record.signal) json["signal"] = *record.signal;
  json["guard"] = record.guard;
  if (!record.guard_error.empty()) json["guard_error"] = record.guard_error;
  if (!record.held_by.empty()) json["held_by"] = record.held_by;
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<RunRecord> ParseRunRecord(std::string_view text) {
  if (text.size() > kMaxRunRecordBytes) {
    return Error{fmt::format("{} bytes, more than a record's {}", text.size(), kMaxRunRecordBytes)};
  }
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  // nlohmann's own message quotes what it read last: only the size is said.
  if (json.is_discarded()) return Error{fmt::format("not JSON ({} bytes)", text.size())};
  if (!json.is_object()) return Error{"not a JSON object"};
  static const std::set<std::string> kKnown = {
      "format",           "role",      "state",  "host",  "pid",         "start",  "end",
      "duration_seconds", "exit_code", "signal", "guard", "guard_error", "held_by"};
  for (const auto& [key, value] : json.items()) {
    if (!kKnown.count(key)) return Error{fmt::format("an unknown key of {} bytes", key.size())};
  }
  auto number = [&](const char* key, bool required) -> Result<std::optional<double>> {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) {
      if (required) return Error{fmt::format("missing \"{}\"", key)};
      return std::optional<double>();
    }
    if (!it->is_number()) return Error{fmt::format("\"{}\" is not a number", key)};
    double value = it->get<double>();
    if (!std::isfinite(value) || value < 0 || value > kMaxTime) {
      return Error{fmt::format("\"{}\" is out of range", key)};
    }
    return std::optional<double>(value);
  };
  auto integer = [&](const char* key, long low, long high) -> Result<std::optional<long>> {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) return std::optional<long>();
    if (!it->is_number_integer()) return Error{fmt::format("\"{}\" is not an integer", key)};
    if (it->is_number_unsigned()
            ? it->get<std::uint64_t>() > static_cast<std::uint64_t>(high)
            : (it->get<std::int64_t>() < low || it->get<std::int64_t>() > high)) {
      return Error{fmt::format("\"{}\" is out of range", key)};
    }
    return std::optional<long>(it->get<long>());
  };
  auto text_of = [&](const char* key, bool required) -> Result<std::string> {
    auto it = json.find(key);
    if (it == json.end() || it->is_null()) {
      if (required) return Error{fmt::format("missing \"{}\"", key)};
      return std::string();
    }
    if (!it->is_string()) return Error{fmt::format("\"{}\" is not a string", key)};
    std::string value = it->get<std::string>();
    if (value.size() > 1024) return Error{fmt::format("\"{}\" is too long", key)};
    return value;
  };

  auto format = integer("format", 0, 1000);
  if (!format) return Error{format.error()};
  if (format->value_or(0) != kRunRecordFormat) {
    return Error{fmt::format("format is not {}", kRunRecordFormat)};
  }
  RunRecord record;
  auto role = text_of("role", true);
  if (!role) return Error{role.error()};
  if (!ValidRole(*role)) return Error{"\"role\" is not a role name"};
  record.role = std::move(*role);
  auto state = text_of("state", true);
  if (!state) return Error{state.error()};
  auto parsed_state = StateFromName(*state);
  if (!parsed_state) return Error{"\"state\" is not running, finished, skipped or not_run"};
  record.state = *parsed_state;
  for (auto [key, slot] :
       {std::pair{"host", &record.host}, std::pair{"guard", &record.guard},
        std::pair{"guard_error", &record.guard_error}, std::pair{"held_by", &record.held_by}}) {
    auto value = text_of(key, false);
    if (!value) return Error{value.error()};
    *slot = std::move(*value);
  }
  auto pid = integer("pid", 0, 1L << 31);
  if (!pid) return Error{pid.error()};
  record.pid = pid->value_or(0);
  auto start = number("start", true);
  if (!start) return Error{start.error()};
  record.start = **start;
  auto end = number("end", false);
  if (!end) return Error{end.error()};
  record.end = *end;
  if (auto duration = number("duration_seconds", false); !duration) {
    return Error{duration.error()};
  }
  auto exit_code = integer("exit_code", 0, 255);
  if (!exit_code) return Error{exit_code.error()};
  if (*exit_code) record.exit_code = static_cast<int>(**exit_code);
  auto signal = integer("signal", 1, 128);
  if (!signal) return Error{signal.error()};
  if (*signal) record.signal = static_cast<int>(**signal);

  if (record.end && *record.end < record.start) return Error{"\"end\" is before \"start\""};
  if (record.state == RunRecord::State::kFinished) {
    if (!record.end) return Error{"a finished run has no \"end\""};
    if (record.exit_code.has_value() == record.signal.has_value()) {
      return Error{"a finished run has exactly one of \"exit_code\" and \"signal\""};
    }
  } else if (record.exit_code || record.signal) {
    return Error{fmt::format("a {} record has no exit status", *state)};
  }
  return record;
}

std::string RunRecordFileName(const RunRecord& record) {
  auto micros = static_cast<std::uint64_t>(std::llround(record.start * 1e6));
  return fmt::format("{:020d}-{}.json", micros, record.pid);
}

RunRecordSummary SummarizeRunRecords(
    const std::vector<std::pair<std::string, RunRecord>>& records) {
  RunRecordSummary summary;
  std::vector<const std::pair<std::string, RunRecord>*> runs;
  for (const auto& entry : records) {
    const RunRecord& record = entry.second;
    if (record.state == RunRecord::State::kSkipped) {
      ++summary.skipped;
      summary.skipped_files.insert(entry.first);
    } else if (record.state != RunRecord::State::kNotRun) {
      runs.push_back(&entry);
    }
  }
  std::sort(runs.begin(), runs.end(),
            [](const auto* a, const auto* b) { return a->second.start < b->second.start; });
  const RunRecord* latest_finished = nullptr;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& record = runs[i]->second;
    summary.has_runs = true;
    Run run;
    run.started = Seconds(record.start);
    if (record.state == RunRecord::State::kFinished) {
      run.finished = Seconds(*record.end);
      run.outcome = record.Succeeded() ? Run::Outcome::kSucceeded : Run::Outcome::kFailed;
      if (!latest_finished || *record.end >= *latest_finished->end) latest_finished = &record;
    } else {
      // Still running, unless a later run took the guard: then this one died with its wrapper.
      for (std::size_t j = i + 1; j < runs.size(); ++j) {
        const RunRecord& later = runs[j]->second;
        if (later.guard != "none" && later.guard_error.empty() && later.start > record.start) {
          run.finished = Seconds(later.start);
          run.outcome = Run::Outcome::kFailed;
          break;
        }
      }
    }
    summary.history.Add(run);
  }
  if (latest_finished) {
    summary.last_duration = latest_finished->Duration();
    summary.last_exit_code = latest_finished->exit_code;
    summary.last_signal = latest_finished->signal;
  }
  if (!runs.empty()) {
    const RunRecord& latest = runs.back()->second;
    summary.guarded = latest.guard != "none" && latest.guard_error.empty() && summary.skipped > 0;
  }
  return summary;
}

RunRecordRead ReadRunRecords(const std::string& directory, const std::string& role,
                             RunRecordCache* cache) {
  RunRecordRead read;
  RunRecordCache::Entry* current_entry = nullptr;
  auto problem = [&](const std::string& name, const std::string& why) {
    std::string message = fmt::format("{}/{}: {}", directory, name, why);
    read.problems.push_back(MakeProblem(Reason::kBadRunRecord, message));
    read.new_problems.push_back(message);
    if (current_entry != nullptr) current_entry->problem = std::move(message);
  };
  // The role's directory may belong to the job's user: none of their links is followed.
  platform::ReadFailure failure;
  auto opened = platform::OpenGuarded(directory, platform::OpenKind::kDirectory, &failure);
  DIR* dir = opened ? fdopendir(opened->get()) : nullptr;
  if (dir == nullptr) {
    if (!opened) {
      if (failure != platform::ReadFailure::kNotFound) {
        read.problems.push_back(MakeProblem(Reason::kBadRunRecord, opened.error()));
        read.new_problems.push_back(opened.error());
      }
    } else {
      std::string message = fmt::format("cannot read {}: {}", directory, std::strerror(errno));
      read.problems.push_back(MakeProblem(Reason::kBadRunRecord, message));
      read.new_problems.push_back(std::move(message));
    }
    if (cache) cache->files.clear();
    return read;
  }
  opened->release();  // closedir closes it
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0 && name[0] != '.') {
      names.push_back(std::move(name));
    }
  }
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxRunRecordFiles) {
    names.erase(names.begin(), names.end() - kMaxRunRecordFiles);  // the newest are kept
  }
  RunRecordCache::Entry scratch;
  std::map<std::string, RunRecordCache::Entry> seen;
  for (const std::string& name : names) {
    struct stat info {};
    if (fstatat(dirfd(dir), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // pruned
    RunRecordCache::Entry current;
    current.device = info.st_dev, current.inode = info.st_ino, current.size = info.st_size;
    current.mtime_ns =
        static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
    if (cache) {
      auto cached = cache->files.find(name);
      if (cached != cache->files.end() && cached->second.device == current.device &&
          cached->second.inode == current.inode && cached->second.size == current.size &&
          cached->second.mtime_ns == current.mtime_ns) {
        if (cached->second.record) read.records.emplace_back(name, *cached->second.record);
        // A bad file is not read again, but stays a problem for as long as it is there.
        if (!cached->second.problem.empty()) {
          read.problems.push_back(MakeProblem(Reason::kBadRunRecord, cached->second.problem));
          read.problems.back().counted_before = true;
        }
        seen[name] = std::move(cached->second);
        continue;
      }
    }
    RunRecordCache::Entry& entry = cache ? seen[name] : scratch;
    entry = current;
    current_entry = &entry;
    if (!S_ISREG(info.st_mode)) {  // a FIFO planted here is not waited on
      problem(name, "not a regular file");
      continue;
    }
    if (info.st_size > static_cast<off_t>(kMaxRunRecordBytes)) {
      problem(name,
              fmt::format("{} bytes, more than a record's {}", info.st_size, kMaxRunRecordBytes));
      continue;
    }
    int fd = openat(dirfd(dir), name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) {
      if (errno != ENOENT) problem(name, std::strerror(errno));
      continue;
    }
    struct stat opened_info {};
    if (fstat(fd, &opened_info) != 0 || opened_info.st_ino != info.st_ino ||
        opened_info.st_dev != info.st_dev) {
      close(fd);  // replaced since fstatat (a record being finished): read at the next refresh
      if (cache) seen.erase(name);
      continue;
    }
    auto text = platform::ReadRegularFd(fd, name, kMaxRunRecordBytes);
    close(fd);
    if (!text) {
      problem(name, text.error());
      continue;
    }
    auto record = ParseRunRecord(*text);
    if (!record) {
      problem(name, record.error());
      continue;
    }
    if (record->role != role) {
      problem(name, fmt::format("the record of another role, in the directory of \"{}\"", role));
      continue;
    }
    entry.record = *record;
    read.records.emplace_back(name, std::move(*record));
  }
  closedir(dir);
  if (cache) cache->files = std::move(seen);  // forgets what is gone
  return read;
}

}  // namespace schedwatch
