#include "sources/crontab/crontab_discoverer.h"

#include <date/tz.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "schedwatch/platform/replace_file.h"
#include "schedwatch/platform/subprocess.h"

namespace schedwatch::crontab {
namespace {

constexpr std::size_t kMaxCrontabBytes = 16u << 20;  // as the source reads them

bool In(std::string_view word, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), word) != set.end();
}

std::string_view Basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool IsAssignment(std::string_view word) {
  auto equals = word.find('=');
  if (equals == 0 || equals == std::string_view::npos) return false;
  return std::all_of(word.begin(), word.begin() + static_cast<long>(equals), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

struct Segment {
  std::vector<std::string> words;
  bool after_pipe = false;  // reads another command's output: a sink (logger, tee, mail)
};

// The command as simple commands, split at && || ; | & ( ), with quotes removed and
// redirections and their targets left out. Enough of sh to find what a line runs.
std::vector<Segment> SplitCommand(std::string_view command) {
  // cron passes what follows the first unescaped '%' as input.
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] == '\\') {
      ++i;
    } else if (command[i] == '%') {
      command = command.substr(0, i);
      break;
    }
  }
  std::vector<Segment> segments(1);
  std::string word;
  bool in_word = false, skip_word = false;
  auto end_word = [&] {
    if (in_word && !skip_word) segments.back().words.push_back(word);
    if (in_word) skip_word = false;
    word.clear();
    in_word = false;
  };
  auto next_segment = [&](bool pipe) {
    end_word();
    if (!segments.back().words.empty()) segments.emplace_back();
    segments.back().after_pipe = pipe;
  };
  for (std::size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (c == ' ' || c == '\t') {
      end_word();
    } else if (c == '\'' || c == '"') {
      std::size_t close = command.find(c, i + 1);
      if (close == std::string_view::npos) close = command.size();
      word.append(command.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ';' || c == '(' || c == ')') {
      next_segment(false);
    } else if (c == '|' || c == '&') {
      bool doubled = i + 1 < command.size() && command[i + 1] == c;
      if (c == '&' && !doubled && i + 1 < command.size() && command[i + 1] == '>') {
        continue;  // &> is a redirection
      }
      next_segment(c == '|' && !doubled);
      if (doubled) ++i;
    } else if (c == '>' || c == '<') {
      // A file descriptor number right before it is part of the redirection ("2>").
      if (in_word && std::all_of(word.begin(), word.end(), ::isdigit)) {
        word.clear();
        in_word = false;
      }
      end_word();
      while (i + 1 < command.size() && (command[i + 1] == '>' || command[i + 1] == '<')) ++i;
      if (i + 1 < command.size() && command[i + 1] == '&') {  // >&2: no file follows
        ++i;
        while (
            i + 1 < command.size() &&
            (std::isdigit(static_cast<unsigned char>(command[i + 1])) || command[i + 1] == '-')) {
          ++i;
        }
      } else {
        skip_word = true;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  end_word();
  return segments;
}

// What the segment runs and its arguments, without keywords, assignments and wrappers; empty
// for a guard (test, [, command -v, cd).
std::vector<std::string> Invocation(const Segment& segment) {
  std::vector<std::string> words = segment.words;
  auto dash_dash = std::find(words.begin(), words.end(), "--");
  if (dash_dash != words.end() && dash_dash + 1 != words.end()) {
    words.erase(words.begin(), dash_dash + 1);
  }
  std::size_t first = 0;
  bool wrapped = false;
  while (first < words.size()) {
    std::string_view word = words[first];
    std::string_view name = Basename(word);
    if (In(word, {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done",
                  "exec", "time"}) ||
        IsAssignment(word)) {
      ++first;
    } else if (In(name, {"nice", "ionice", "nohup", "setsid", "chronic", "env", "stdbuf"})) {
      wrapped = true;
      ++first;
    } else if (wrapped && (word.front() == '-' || std::all_of(word.begin(), word.end(), [](char c) {
                             return std::isdigit(static_cast<unsigned char>(c));
                           }))) {
      ++first;  // a wrapper's options: nice -n 19
    } else {
      break;
    }
  }
  words.erase(words.begin(), words.begin() + static_cast<long>(first));
  if (words.empty()) return {};
  if (In(Basename(words[0]), {"test",  "[",      "[[",    "command", "cd",     "true",  "false",
                              "exit",  ":",      "sleep", "echo",    "printf", "type",  "which",
                              "pgrep", "ulimit", "umask", "set",     "export", "return"})) {
    return {};
  }
  return words;
}

std::string WithoutExtension(std::string_view name) {
  for (std::string_view extension :
       {".sh", ".bash", ".py", ".pl", ".rb", ".php", ".js", ".service", ".timer"}) {
    if (name.size() > extension.size() &&
        name.substr(name.size() - extension.size()) == extension) {
      return std::string(name.substr(0, name.size() - extension.size()));
    }
  }
  return std::string(name);
}

std::string Errno(int error) { return std::strerror(error); }

}  // namespace

std::string SuggestRole(const std::string& file, CrontabKind kind, const std::string& user,
                        std::string_view command) {
  std::vector<std::string> chosen;
  for (const Segment& segment : SplitCommand(command)) {
    if (segment.after_pipe) continue;
    if (auto words = Invocation(segment); !words.empty()) chosen = std::move(words);
  }
  std::string word;
  if (!chosen.empty()) {
    std::string_view program = Basename(chosen[0]);
    std::vector<std::string_view> arguments;
    for (std::size_t i = 1; i < chosen.size(); ++i) {
      if (!chosen[i].empty() && chosen[i][0] != '-') arguments.push_back(chosen[i]);
    }
    if (In(program, {"systemctl"}) && !arguments.empty()) {
      word = WithoutExtension(Basename(arguments.back()));  // systemctl start x.service
    } else if (In(program,
                  {"run-parts", "sh", "bash", "dash", "zsh", "python", "python3", "perl", "php",
                   "ruby", "node", "invoke-rc.d", "service", "su", "flock", "xargs"}) &&
               !arguments.empty()) {
      word = WithoutExtension(Basename(arguments.front()));
    } else {
      word = WithoutExtension(program);
    }
  }
  std::string prefix = kind == CrontabKind::kUser ? user : std::string(Basename(file));
  if (kind == CrontabKind::kSystem && prefix == "crontab") prefix.clear();  // /etc/crontab
  if (word.empty()) return prefix.empty() ? "job" : prefix;
  if (prefix.empty() || word.rfind(prefix, 0) == 0) return word;
  if (prefix.rfind(word, 0) == 0) return prefix;
  return prefix + "-" + word;
}

std::string MarkerLine(const std::string& role, const std::string& spec_version) {
  return fmt::format("# schedwatch: role={} spec_version={}", role, spec_version);
}

Result<std::string> InsertMarkers(std::string_view text, CrontabKind kind, const std::string& owner,
                                  const UserTable* users,
                                  const std::vector<std::pair<int, std::string>>& markers) {
  ParsedCrontab before = ParseCrontab(text, kind, owner, users);
  if (!before.ignored_because.empty()) {
    return Error{fmt::format("cron does not load it ({})", before.ignored_because)};
  }
  std::map<int, std::string> above;  // by entry line
  for (const auto& [line, marker] : markers) {
    auto entry = std::find_if(before.entries.begin(), before.entries.end(),
                              [line = line](const CrontabEntry& e) { return e.line == line; });
    if (entry == before.entries.end() || !entry->enabled || !entry->role.empty()) {
      return Error{fmt::format("line {} is not an entry without a marker", line)};
    }
    if (marker.find('\n') != std::string::npos || !above.emplace(line, marker).second) {
      return Error{fmt::format("line {}: one marker line per entry", line)};
    }
  }
  std::string out;
  out.reserve(text.size() + markers.size() * 64);
  int number = 1;
  for (std::size_t start = 0; start < text.size(); ++number) {
    std::size_t end = text.find('\n', start);
    end = end == std::string_view::npos ? text.size() : end + 1;
    if (auto it = above.find(number); it != above.end()) out += it->second + "\n";
    out.append(text.substr(start, end - start));
    start = end;
  }
  // Read back as cron would: only markers were added.
  ParsedCrontab after = ParseCrontab(out, kind, owner, users);
  bool same = after.ignored_because.empty() && after.entries.size() == before.entries.size();
  for (std::size_t i = 0; same && i < after.entries.size(); ++i) {
    const CrontabEntry& old_entry = before.entries[i];
    const CrontabEntry& new_entry = after.entries[i];
    auto marker = above.find(old_entry.line);
    same = old_entry.schedule == new_entry.schedule && old_entry.user == new_entry.user &&
           old_entry.command == new_entry.command && old_entry.enabled == new_entry.enabled &&
           (marker == above.end()
                ? new_entry.role == old_entry.role
                : !new_entry.role.empty() &&
                      marker->second.find("role=" + new_entry.role + " ") != std::string::npos);
  }
  if (!same) {
    return Error{
        after.ignored_because.empty()
            ? "with the markers, cron would read other entries"
            : fmt::format("with the markers, cron would not load it ({})", after.ignored_because)};
  }
  return out;
}

ChosenSetting FindHistory(CrontabSourceOptions& options, const ListContext& context) {
  const std::string& syslog = options.syslog;
  const std::string path = options.root + syslog;
  // Not there, or nothing the source could read (a directory, a FIFO): as good as absent.
  struct stat file {};
  std::string absent;  // why, "" when it is there
  if (stat(path.c_str(), &file) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) absent = "does not exist";
  } else if (!S_ISREG(file.st_mode)) {
    absent = fmt::format("is {}, not a regular file", platform::DescribeFileType(file.st_mode));
  }
  const bool readable = absent.empty() && access(path.c_str(), R_OK) == 0;
  // The newest line of cron's (its daemon logs as "cron", its jobs as "CRON"), from the journal
  // the source would read (CrontabSource::ReadJournal).
  std::vector<std::string> argv = {options.journalctl, "-t", "CRON", "-t", "cron", "-n", "1", "-q",
                                   "--no-pager",       "-o", "json"};
  if (!options.journal_directory.empty()) {
    argv.push_back("--directory=" + options.root + options.journal_directory);
  } else if (!options.root.empty()) {
    argv.push_back("--root=" + options.root);
  }
  bool in_journal = false;
  platform::CommandOptions command;
  command.clean_error = SanitizeUtf8;
  auto read = platform::RunCommand(
      argv,
      [&](std::string_view text) {
        in_journal = in_journal || text.find('{') != std::string_view::npos;
        return text.size();
      },
      context.cancelled, command);
  in_journal = in_journal && read.ok();

  options.journal = !absent.empty() && in_journal;
  if (absent.empty()) {
    std::string why = fmt::format("{} exists", SanitizeUtf8(syslog));
    if (!readable) why += " (this user cannot read it: the exporter's user needs group adm)";
    if (in_journal) {
      why +=
          "; the journal has cron's lines too, but the file is read from where it stopped, "
          "with no journalctl at each refresh";
    }
    return {"history", "syslog", why};
  }
  if (in_journal) {
    return {"history", "journal",
            fmt::format("{} {}; cron logs to the journal", SanitizeUtf8(syslog), absent)};
  }
  std::string journal = read ? "the journal (as this user reads it) has no line of cron's"
                             : "the journal could not be read (" + read.error() + ")";
  return {"", "",
          fmt::format("No run history found: {} {},\n"
                      "and {}.\n"
                      "Until cron logs to one of them, schedwatch sees only whether each entry\n"
                      "exists, not whether it ran. Install rsyslog (for {}: history: syslog,\n"
                      "the default) or let cron log to the journal (systemd-journald: history:\n"
                      "journal), then run discover again.",
                      SanitizeUtf8(syslog), absent, journal, SanitizeUtf8(syslog))};
}

CrontabDiscoverer::CrontabDiscoverer(CrontabSourceOptions options, bool find_history)
    : options_(std::move(options)), find_history_(find_history) {}

Result<Discovery> CrontabDiscoverer::Discover(const ListContext& context) {
  Discovery discovery;
  CrontabSourceOptions options = options_;
  if (find_history_) discovery.settings.push_back(FindHistory(options, context));
  CrontabSource source(options);
  auto contents = source.ListEverything(context);
  if (!contents) return Error{contents.error()};
  std::string zone = options_.zone != nullptr ? std::string(options_.zone->name()) : "";
  if (zone.empty()) {
    try {
      zone = std::string(date::current_zone()->name());
    } catch (const std::exception&) {
      zone = "UTC";
    }
  }
  for (const auto& found : contents->entries) {
    const CrontabEntry& entry = found.entry;
    FoundObject object;
    object.id = fmt::format("{}:{}", SanitizeUtf8(found.file), entry.line);
    object.role = entry.role;
    object.spec_version = entry.spec_version;
    object.marked = !entry.role.empty();
    object.suggested_role =
        SuggestRole(found.file, found.kind, entry.user, SanitizeUtf8(entry.command));
    object.schedule = SanitizeUtf8(entry.schedule);
    object.timezone = zone;
    if (!entry.enabled) object.not_run_because = "commented out under its marker";
    if (auto history = contents->history.find(object.id); history != contents->history.end()) {
      AddLongestRun(history->second, /*successes_only=*/false, object);
    }
    kinds_[found.file] = found.kind;
    if (found.kind == CrontabKind::kUser) users_[found.file] = entry.user;
    discovery.objects.push_back(std::move(object));
  }
  for (const auto& [file, why] : contents->not_run) {
    FoundObject object;
    object.id = SanitizeUtf8(file);
    object.not_run_because = fmt::format("cron does not run this file: {}", SanitizeUtf8(why));
    discovery.objects.push_back(std::move(object));
  }
  if (!contents->history_error.empty()) {
    discovery.notes.push_back(fmt::format("no run history, so no max_runtime from it: {}",
                                          SanitizeUtf8(contents->history_error)));
  }
  return discovery;
}

std::string CrontabDiscoverer::MarkerInstructions(const FoundObject& object,
                                                  const std::string& role,
                                                  const std::string& spec_version) const {
  auto colon = object.id.rfind(':');
  return fmt::format("{}: above line {} add\n  {}\n", object.id.substr(0, colon),
                     object.id.substr(colon + 1), MarkerLine(role, spec_version));
}

Result<std::vector<std::string>> CrontabDiscoverer::WriteMarkers(
    const std::vector<MarkerToWrite>& markers) {
  std::map<std::string, std::vector<const MarkerToWrite*>> by_file;
  for (const auto& marker : markers) {
    by_file[marker.object.id.substr(0, marker.object.id.rfind(':'))].push_back(&marker);
  }
  std::vector<std::string> lines;
  for (const auto& [file, file_markers] : by_file) {
    auto written = WriteFileMarkers(file, file_markers);
    lines.push_back(written ? *written : fmt::format("{}: not changed: {}", file, written.error()));
  }
  return lines;
}

Result<std::string> CrontabDiscoverer::WriteFileMarkers(
    const std::string& file, const std::vector<const MarkerToWrite*>& markers) {
  auto kind = kinds_.find(file);
  if (kind == kinds_.end()) return Error{"not a crontab this discover read"};
  const std::string real = options_.root + file;
  // The file itself, never what a link points at; one name only; read with a cap.
  struct stat named {};
  if (lstat(real.c_str(), &named) != 0) return Error{Errno(errno)};
  if (S_ISLNK(named.st_mode)) return Error{"it is a symbolic link; add its markers by hand"};
  if (!S_ISREG(named.st_mode)) return Error{platform::DescribeFileType(named.st_mode)};
  if (named.st_nlink != 1) return Error{"it has more than one hard link"};
  platform::UniqueFd fd(open(real.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return Error{Errno(errno)};
  struct stat opened {};
  if (fstat(fd.get(), &opened) != 0 || opened.st_dev != named.st_dev ||
      opened.st_ino != named.st_ino) {
    return Error{"it was replaced while being opened"};
  }
  UserTable users = UserTable::System();
  if (!options_.root.empty()) {
    users = UserTable::AcceptAll();
    if (auto text = platform::ReadRegularFile(options_.root + "/etc/passwd", kMaxCrontabBytes)) {
      users = UserTable::FromPasswd(*text);
    }
  }
  const std::string owner = kind->second == CrontabKind::kUser ? users_[file] : "";
  // Only a file cron would take: its owner (root, or the user of a user crontab).
  long uid = static_cast<long>(opened.st_uid);
  bool owner_ok = uid == options_.trusted_uid;
  if (kind->second == CrontabKind::kUser) {
    auto user_uid = users.Uid(owner);
    owner_ok = owner_ok || (user_uid && (*user_uid == -1 || *user_uid == uid));
  }
  if (!owner_ok) return Error{"its owner is not one cron accepts"};
  platform::ReadFailure failure = platform::ReadFailure::kNone;
  auto text = platform::ReadRegularFd(fd.get(), file, kMaxCrontabBytes, nullptr, &failure);
  if (failure == platform::ReadFailure::kTooLarge) {
    return Error{fmt::format("larger than {} MiB", kMaxCrontabBytes >> 20)};
  }
  if (!text) return Error{text.error()};
  // The entries must still be what discover saw.
  ParsedCrontab parsed = ParseCrontab(*text, kind->second, owner, &users);
  std::vector<std::pair<int, std::string>> lines;
  for (const MarkerToWrite* marker : markers) {
    int line = std::atoi(marker->object.id.substr(marker->object.id.rfind(':') + 1).c_str());
    auto entry = std::find_if(parsed.entries.begin(), parsed.entries.end(),
                              [line](const CrontabEntry& e) { return e.line == line; });
    if (entry == parsed.entries.end() || SanitizeUtf8(entry->schedule) != marker->object.schedule) {
      return Error{fmt::format("line {} changed since it was read; run discover again", line)};
    }
    lines.emplace_back(line, MarkerLine(marker->role, marker->spec_version));
  }
  auto marked = InsertMarkers(*text, kind->second, owner, &users, lines);
  if (!marked) return Error{marked.error()};

  platform::AtomicWrite how;
  how.mode = opened.st_mode & 07777;
  how.owner =
      std::make_pair(static_cast<unsigned>(opened.st_uid), static_cast<unsigned>(opened.st_gid));
  // Beside the file, with a name cron skips (it starts with a dot).
  std::string directory = real.substr(0, real.rfind('/'));
  std::string backup = fmt::format("{}/.{}.schedwatch-bak", directory, Basename(real));
  auto saved = platform::WriteFileAtomically(backup, *text, how);
  if (!saved) return Error{fmt::format("no backup: {}", saved.error())};
  how.before_rename = [&]() -> Result<bool> {
    struct stat now {};
    if (lstat(real.c_str(), &now) != 0 || now.st_dev != opened.st_dev ||
        now.st_ino != opened.st_ino || now.st_size != opened.st_size ||
        now.st_mtim.tv_sec != opened.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != opened.st_mtim.tv_nsec) {
      return Error{"it changed while the markers were written; run discover again"};
    }
    return true;
  };
  auto written = platform::WriteFileAtomically(real, *marked, how);
  if (!written) return Error{written.error()};
  return fmt::format("{}: added {} marker{} (backup: {})", file, markers.size(),
                     markers.size() == 1 ? "" : "s", backup.substr(options_.root.size()));
}

Result<std::unique_ptr<Discoverer>> MakeCrontabDiscoverer(const SourceOptions& options) {
  auto crontab = CrontabOptionsFor(options);
  if (!crontab) return Error{crontab.error()};
  const auto* settings = options.spec->SettingsAs<CrontabSettings>();
  return std::unique_ptr<Discoverer>(std::make_unique<CrontabDiscoverer>(
      std::move(*crontab), settings != nullptr && !settings->history_stated));
}

}  // namespace schedwatch::crontab
