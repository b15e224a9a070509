#include "sources/systemd/unit_journal.h"

#include <fmt/format.h>
#include <systemd/sd-journal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace schedwatch::systemd {
namespace {

bool ValidId(std::string_view id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::optional<JournalEntry> EntryFromFields(const std::vector<std::string_view>& fields,
                                            std::uint64_t realtime_us, std::string* why) {
  JournalEntry entry;
  entry.time = static_cast<std::int64_t>(realtime_us / 1000000u);
  for (std::string_view field : fields) {
    auto eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = field.substr(0, eq), value = field.substr(eq + 1);
    if (value.size() > 256) continue;  // none of ours is long
    if (name == "UNIT") {
      entry.unit = value;
    } else if (name == "INVOCATION_ID") {
      entry.invocation_id = value;
    } else if (name == "MESSAGE_ID") {
      entry.message_id = value;
    } else if (name == "UNIT_RESULT") {
      entry.unit_result = value;
    } else if (name == "EXIT_CODE") {
      entry.exit_code = value;
    } else if (name == "EXIT_STATUS") {
      entry.exit_status = value;
    }
  }
  auto fail = [why](const char* text) {
    if (why != nullptr) *why = text;
    return std::nullopt;
  };
  if (entry.unit.empty()) return fail("no UNIT");
  if (!ValidId(entry.invocation_id)) return fail("no INVOCATION_ID of 32 hex digits");
  if (!ValidId(entry.message_id)) return fail("no MESSAGE_ID of 32 hex digits");
  if (realtime_us == 0) return fail("no time");
  return entry;
}

void JournalRuns::Apply(const JournalEntry& entry) {
  const bool start = entry.message_id == kJobStarted;
  const bool exit = entry.message_id == kProcessExit;
  const bool failed = entry.message_id == kUnitFailed;
  const bool succeeded = entry.message_id == kUnitSucceeded;
  if (!start && !exit && !failed && !succeeded) return;
  auto& runs = units_[entry.unit];
  auto it = std::find_if(runs.rbegin(), runs.rend(), [&](const JournalRun& run) {
    return run.invocation_id == entry.invocation_id;
  });
  JournalRun* run;
  if (it == runs.rend()) {
    if (runs.size() >= kept_) runs.erase(runs.begin());
    runs.push_back(
        {entry.invocation_id, Run{entry.time, std::nullopt, Run::Outcome::kRunning}, ""});
    run = &runs.back();
  } else {
    run = &*it;
  }
  if (start) run->run.started = std::min(run->run.started, entry.time);
  if (exit && entry.exit_code == "exited" && !entry.exit_status.empty()) {
    run->failure = "status " + entry.exit_status;
  } else if (exit && !entry.exit_code.empty()) {
    run->failure = entry.exit_code + " " + entry.exit_status;  // killed 9, dumped 6
  }
  if (failed || succeeded) {
    run->run.finished = entry.time;
    run->run.outcome = succeeded ? Run::Outcome::kSucceeded : Run::Outcome::kFailed;
    if (succeeded) {
      run->failure.clear();
    } else {
      std::string detail = run->failure;
      run->failure = entry.unit_result.empty() ? "failed" : entry.unit_result;
      if (!detail.empty()) run->failure += ", " + detail;
    }
  }
}

const std::vector<JournalRun>* JournalRuns::RunsOf(const std::string& unit) const {
  auto it = units_.find(unit);
  return it == units_.end() ? nullptr : &it->second;
}

RunHistory JournalRuns::HistoryOf(const std::string& unit, std::string_view skip) const {
  RunHistory history;
  auto it = units_.find(unit);
  if (it == units_.end()) return history;
  for (const auto& run : it->second) {
    if (!skip.empty() && run.invocation_id == skip) continue;
    // A run whose end the journal does not hold: the service's properties say whether it still
    // runs (only one invocation runs at a time), so it is no run here.
    if (run.run.outcome == Run::Outcome::kRunning) continue;
    Run named = run.run;
    if (!run.invocation_id.empty()) {
      named.identity = std::make_shared<const RunIdentity>(RunIdentity{run.invocation_id, ""});
    }
    history.Add(named);
  }
  return history;
}

void JournalReader::Swap(JournalReader& other) {
  std::swap(directory_, other.directory_);
  std::swap(units_, other.units_);
  std::swap(cursor_, other.cursor_);
  std::swap(runs_, other.runs_);
}

namespace {

struct JournalCloser {
  void operator()(sd_journal* j) const { sd_journal_close(j); }
};

}  // namespace

Result<bool> JournalReader::Read(const JournalOptions& options, ProblemSink& problems) {
  if (options.directory != directory_ || options.units != units_) {
    // Other units: their history lies before the cursor; start again from the backlog.
    directory_ = options.directory;
    units_ = options.units;
    cursor_.clear();
    runs_.Clear();
  }
  if (units_.empty()) return true;
  sd_journal* raw = nullptr;
  int r = options.directory.empty()
              ? sd_journal_open(&raw, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM)
              : sd_journal_open_directory(&raw, options.directory.c_str(), 0);
  std::unique_ptr<sd_journal, JournalCloser> journal(raw);
  if (r < 0) {
    return Error{fmt::format("cannot open the journal{}: {}",
                             options.directory.empty() ? "" : " in " + options.directory,
                             std::strerror(-r))};
  }
  // PID 1's messages about these units only.
  for (const auto& unit : units_) {
    std::string match = "UNIT=" + unit;
    if (sd_journal_add_match(raw, match.data(), match.size()) < 0) {
      return Error{"cannot filter the journal"};
    }
  }
  sd_journal_add_conjunction(raw);
  sd_journal_add_match(raw, "_PID=1", 0);

  auto expired = [&options] {
    return (options.cancelled != nullptr && options.cancelled->load()) ||
           std::chrono::steady_clock::now() > options.deadline;
  };
  auto read_entry = [&](std::vector<JournalEntry>& out) {
    std::vector<std::string_view> fields;
    const void* data = nullptr;
    size_t length = 0;
    sd_journal_restart_data(raw);
    while (sd_journal_enumerate_data(raw, &data, &length) > 0) {
      fields.emplace_back(static_cast<const char*>(data), length);
    }
    std::uint64_t realtime = 0;
    sd_journal_get_realtime_usec(raw, &realtime);
    std::string why;
    auto entry = EntryFromFields(fields, realtime, &why);
    if (!entry) {
      problems.Add(Reason::kGarbledLine,
                   [&] { return fmt::format("journal entry of PID 1 about a unit: {}", why); });
      return;
    }
    out.push_back(std::move(*entry));
  };

  std::vector<JournalEntry> entries;
  std::string last = cursor_;  // kept only when the read completes
  auto remember = [&raw, &last] {
    char* cursor = nullptr;
    if (sd_journal_get_cursor(raw, &cursor) >= 0) {
      last = cursor;
      free(cursor);
    }
  };
  if (cursor_.empty()) {
    sd_journal_seek_tail(raw);
    while (entries.size() < options.backlog_entries && sd_journal_previous(raw) > 0) {
      if (expired()) return Error{"timed out reading the journal"};
      if (last.empty()) remember();  // the newest entry
      read_entry(entries);
    }
    std::reverse(entries.begin(), entries.end());
  } else {
    r = sd_journal_seek_cursor(raw, cursor_.c_str());
    if (r < 0) return Error{"cannot seek the journal to where it was read"};
    // The entry at the cursor was read last time.
    if (sd_journal_next(raw) > 0 && sd_journal_test_cursor(raw, cursor_.c_str()) <= 0) {
      sd_journal_previous(raw);
    }
    std::size_t count = 0;
    while (count < options.max_entries && sd_journal_next(raw) > 0) {
      if (expired()) return Error{"timed out reading the journal"};
      read_entry(entries);
      ++count;
      remember();
    }
  }
  cursor_ = last;
  for (const auto& entry : entries) {
    if (units_.count(entry.unit) != 0) runs_.Apply(entry);
  }
  return true;
}

}  // namespace schedwatch::systemd
