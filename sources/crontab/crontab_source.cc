#include "sources/crontab/crontab_source.h"

#include <date/tz.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"
#include "schedwatch/platform/subprocess.h"
#include "schedwatch/schedule.h"
#include "sources/problems.h"

namespace schedwatch::crontab {
namespace {

constexpr std::size_t kChunkBytes = 1u << 20;
constexpr std::size_t kMaxCrontabBytes = 16u << 20;         // 10,003 lines of 998-byte commands fit
constexpr std::size_t kMarkerScanBytes = kMaxCrontabBytes;  // of a file cron skips, for markers
constexpr std::size_t kMaxErrorBytes = 4096;                // of journalctl's stderr kept
constexpr std::size_t kMaxCommandLineBytes = 16u << 20;     // of one line of journalctl's output
constexpr std::size_t kHeadBytes = 256;                     // compared to notice a rewritten log

std::string Errno(int error) { return std::strerror(error); }

// cron reads only cron.d names of letters, digits, '_' and '-' (no dots: x.conf, *.dpkg-old).
bool CronAcceptsName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// A path named `crontabs`, or in a directory named so, holds user crontabs.
CrontabKind KindOf(const std::string& path, bool is_directory) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  std::size_t slash = trimmed.rfind('/');
  std::string name = trimmed.substr(slash + 1);
  std::string parent = slash == std::string::npos || slash == 0 ? "" : trimmed.substr(0, slash);
  parent = parent.substr(parent.rfind('/') + 1);
  bool user = is_directory ? name == "crontabs" : parent == "crontabs";
  return user ? CrontabKind::kUser : CrontabKind::kSystem;
}

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

const date::time_zone* LocalZone() {
  if (const char* tz = std::getenv("TZ"); tz != nullptr && *tz != '\0') {
    if (const auto* zone = FindZone(*tz == ':' ? tz + 1 : tz)) return zone;
  }
  try {
    return date::current_zone();
  } catch (const std::exception&) {
    return nullptr;  // UTC
  }
}

}  // namespace

void LogTail::Swap(LogTail& other) {
  std::swap(path_, other.path_);
  std::swap(max_backlog_, other.max_backlog_);
  std::swap(fd_, other.fd_);
  std::swap(device_, other.device_);
  std::swap(inode_, other.inode_);
  std::swap(offset_, other.offset_);
  std::swap(head_, other.head_);
}

LogTail::~LogTail() {
  if (fd_ >= 0) close(fd_);
}

Result<bool> LogTail::Drain(const Consume& consume, const std::atomic<bool>* cancelled) {
  std::string buffer;
  std::int64_t read_at = offset_;
  while (cancelled == nullptr || !cancelled->load()) {
    std::size_t kept = buffer.size();
    buffer.resize(kept + kChunkBytes);
    ssize_t n = pread(fd_, buffer.data() + kept, kChunkBytes, read_at);
    if (n < 0 && errno == EINTR) {
      buffer.resize(kept);
      continue;
    }
    if (n < 0) return Error{fmt::format("cannot read {}: {}", path_, Errno(errno))};
    // Extend the remembered head with bytes read in order from the file's start.
    if (read_at <= static_cast<std::int64_t>(head_.size()) && head_.size() < kHeadBytes) {
      std::size_t skip = head_.size() - static_cast<std::size_t>(read_at);
      if (static_cast<std::size_t>(n) > skip) {
        head_.append(buffer, kept + skip,
                     std::min(static_cast<std::size_t>(n) - skip, kHeadBytes - head_.size()));
      }
    }
    buffer.resize(kept + static_cast<std::size_t>(n));
    read_at += n;
    std::size_t used = consume(buffer);
    offset_ += static_cast<std::int64_t>(used);
    buffer.erase(0, used);
    if (n == 0) return true;
  }
  return Error{"cancelled"};
}

Result<bool> LogTail::Read(const Consume& consume, const Restart& restart,
                           const std::atomic<bool>* cancelled) {
  if (fd_ >= 0) {
    struct stat opened {};
    std::string head(head_.size(), '\0');
    bool rewritten = (fstat(fd_, &opened) == 0 && opened.st_size < offset_) ||
                     pread(fd_, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()) ||
                     head != head_;
    if (rewritten) {  // truncated in place, maybe written again since
      offset_ = 0;
      head_.clear();
      restart(false);
    }
    auto drained = Drain(consume, cancelled);
    if (!drained) return drained;
  }
  struct stat current {};
  if (stat(path_.c_str(), &current) != 0) {
    // Between a rotation's rename and the new file, keep what was read.
    if (errno == ENOENT && fd_ >= 0) return true;
    return Error{fmt::format("cannot read {}: {}", path_, Errno(errno))};
  }
  if (fd_ >= 0 && current.st_dev == device_ && current.st_ino == inode_) return true;
  // Non-blocking: a FIFO in the log's place must not hang the read (it is refused below).
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{fmt::format("cannot read {}: {}", path_, Errno(errno))};
  struct stat opened {};
  fstat(fd, &opened);
  if (!S_ISREG(opened.st_mode)) {
    close(fd);
    return Error{fmt::format("cannot read {}: it is {}, not a regular file", path_,
                             platform::DescribeFileType(opened.st_mode))};
  }
  bool first_open = fd_ < 0;
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  device_ = opened.st_dev;
  inode_ = opened.st_ino;
  offset_ = 0;
  head_.assign(kHeadBytes, '\0');
  ssize_t head_bytes = pread(fd_, head_.data(), kHeadBytes, 0);
  head_.resize(head_bytes > 0 ? static_cast<std::size_t>(head_bytes) : 0);
  if (first_open && static_cast<std::size_t>(opened.st_size) > max_backlog_) {
    offset_ = opened.st_size - static_cast<std::int64_t>(max_backlog_);
    restart(true);
  } else {
    restart(false);
  }
  return Drain(consume, cancelled);
}

void CrontabSource::LoggedEntries::Add(std::string_view user, std::string_view command,
                                       std::uint32_t object) {
  Entry entry;
  entry.name = adding_.size();
  adding_.append(user).append(1, '\0').append(command);
  entry.size = static_cast<std::uint32_t>(adding_.size() - entry.name);
  entry.object = object;
  entries_.push_back(entry);
}

void CrontabSource::LoggedEntries::Seal() {
  if (sealed_ == entries_.size()) return;
  SharedText text(adding_.size());
  if (!adding_.empty()) std::memcpy(text.data(), adding_.data(), adding_.size());
  for (std::size_t i = sealed_; i < entries_.size(); ++i) {
    entries_[i].name += reinterpret_cast<std::uintptr_t>(text.data());
  }
  texts_.push_back(std::move(text));
  std::string().swap(adding_);  // freed: assigning an empty string would keep its capacity
  sealed_ = entries_.size();
  entries_.shrink_to_fit();
}

void CrontabSource::LoggedEntries::Append(const LoggedEntries& other, std::uint32_t first_object) {
  if (other.sealed_ != other.entries_.size()) {
    throw std::logic_error("LoggedEntries::Append: the entries appended are not sealed");
  }
  Seal();
  texts_.insert(texts_.end(), other.texts_.begin(), other.texts_.end());
  for (Entry entry : other.entries_) {
    entry.object += first_object;
    entries_.push_back(entry);
  }
  sealed_ = entries_.size();
}

void CrontabSource::LoggedEntries::Sort() {
  Seal();
  std::sort(entries_.begin(), entries_.end(),
            [this](const Entry& a, const Entry& b) { return Name(a) < Name(b); });
}

void CrontabSource::LoggedEntries::ObjectsOf(std::string_view user, std::string_view command,
                                             std::vector<std::uint32_t>& objects) const {
  // user '\0' command, compared without being put together.
  auto compare = [&](const Entry& entry) {
    std::string_view name = Name(entry);
    std::size_t split = name.find('\0');  // Add put one after the user
    if (int c = name.substr(0, split).compare(user); c != 0) return c;
    return name.substr(split + 1).compare(command);
  };
  auto first = std::partition_point(entries_.begin(), entries_.end(),
                                    [&](const Entry& entry) { return compare(entry) < 0; });
  for (auto it = first; it != entries_.end() && compare(*it) == 0; ++it) {
    objects.push_back(it->object);
  }
}

CrontabSource::CrontabSource(CrontabSourceOptions options)
    : options_(std::move(options)),
      tail_(options_.root + options_.syslog, options_.max_backlog_bytes),
      log_problems_(options_.problems_per_reason) {
  if (options_.zone == nullptr) options_.zone = LocalZone();
}

CrontabSource::ParsedFile CrontabSource::Parse(std::string_view text, const std::string& shown,
                                               CrontabKind kind, const std::string& user,
                                               UserTable& users,
                                               CrontabContents* everything) const {
  ParsedFile file;
  users.NoteLookups(&file.users);
  ParsedCrontab parsed = ParseCrontab(text, kind, user, &users);
  users.NoteLookups(nullptr);
  // Each entry asks for its user: a file of 1,000 root entries noted "root" 1,000 times.
  std::sort(file.users.begin(), file.users.end());
  file.users.erase(std::unique(file.users.begin(), file.users.end()), file.users.end());
  file.users.shrink_to_fit();
  const std::string clean_name = SanitizeUtf8(shown);
  for (auto& problem : parsed.problems) {
    file.problems.push_back(
        MakeProblem(problem.reason, fmt::format("{}: {}", clean_name, problem.message)));
  }
  file.ignored_because = std::move(parsed.ignored_because);
  if (!file.ignored_because.empty()) return file;
  for (auto& entry : parsed.entries) {
    if (everything != nullptr) everything->entries.push_back({shown, kind, entry});
    // Another shard's objects (in the spec or not: both go by the role's hash) would only be
    // dropped after the read (KeepShardOf): never made, they cost a shard of ten no 900,000.
    if (entry.role.empty() || !options_.shard.Owns(entry.role)) continue;
    if (entry.enabled) {
      file.logged.Add(entry.user, LoggedCommand(entry.command),
                      static_cast<std::uint32_t>(file.objects.size()));
    }
    file.objects.push_back({fmt::format("{}:{}", clean_name, entry.line), std::move(entry.role),
                            SanitizeUtf8(entry.schedule), "", std::move(entry.spec_version),
                            entry.enabled});
  }
  file.objects.shrink_to_fit();
  file.logged.Seal();  // the lists made of it share its names
  return file;
}

Result<CrontabSource::LoggedEntries> CrontabSource::ReadCrontabs(SourceSnapshot& snapshot,
                                                                 CrontabContents* everything) {
  // Users are looked up afresh at every list, as cron does when it reloads.
  UserTable users = UserTable::System();
  if (!options_.root.empty()) {
    users = UserTable::AcceptAll();
    if (auto text = platform::ReadRegularFile(options_.root + "/etc/passwd", kMaxCrontabBytes)) {
      users = UserTable::FromPasswd(*text);
    }
  }
  LoggedEntries entries;
  entries.Reserve(objects_last_);
  // Files of the last list, taken whole or dropped: only this list's stay.
  std::map<std::string, ParsedFile> last_files;
  if (everything == nullptr) last_files.swap(parsed_files_);
  auto ignored = [&snapshot, everything](const std::string& shown, const std::string& why) {
    if (everything != nullptr) everything->not_run.emplace_back(shown, why);
    snapshot.problems.push_back(
        MakeProblem(Reason::kCrontabIgnored,
                    fmt::format("{}: {}; cron does not run it", SanitizeUtf8(shown), why)));
  };
  // A file cron skips for its name or user is reported only when it carries a marker.
  auto report_if_marked = [&](const std::string& real, const std::string& shown,
                              const std::string& why) {
    auto text = platform::ReadRegularFile(real, kMarkerScanBytes);
    if (everything != nullptr || (text && text->find("schedwatch:") != std::string::npos)) {
      ignored(shown, why);
    }
  };

  // One crontab file; an Error only for a file that exists and cannot be read.
  auto read_file = [&](const std::string& real, const std::string& shown,
                       CrontabKind kind) -> Result<bool> {
    struct stat link {};
    if (lstat(real.c_str(), &link) != 0) {
      if (errno == ENOENT) return true;  // vanished since the directory was listed
      return Error{fmt::format("cannot read {}: {}", shown, Errno(errno))};
    }
    std::string user = kind == CrontabKind::kUser ? Basename(shown) : "";
    std::optional<long> user_uid = kind == CrontabKind::kUser ? users.Uid(user) : -1;
    if (!user_uid) {
      report_if_marked(real, shown, "ORPHAN (no passwd entry)");
      return true;
    }
    if (S_ISLNK(link.st_mode) && static_cast<long>(link.st_uid) != options_.trusted_uid) {
      ignored(shown, "WRONG SYMLINK OWNER");
      return true;
    }
    int fd = open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      if (errno == ENOENT) return true;
      return Error{fmt::format("cannot read {}: {}", shown, Errno(errno))};
    }
    struct stat info {};
    fstat(fd, &info);
    std::optional<std::string> why;
    long owner = static_cast<long>(info.st_uid);
    if (!S_ISREG(info.st_mode)) {
      close(fd);
      return true;  // cron logs NOT A REGULAR FILE for a directory in cron.d; nothing to run
    }
    bool user_owns = kind == CrontabKind::kUser && (*user_uid == -1 || owner == *user_uid);
    if (owner != options_.trusted_uid && !user_owns) {
      why = "WRONG FILE OWNER";
    } else if (kind == CrontabKind::kSystem && (info.st_mode & 022) != 0) {
      why = "INSECURE MODE (group/other writable)";
    } else if (kind == CrontabKind::kUser && (info.st_mode & 07777) != 0600) {
      why = "INSECURE MODE (mode 0600 expected)";
    } else if (info.st_nlink != 1) {
      why = "NUMBER OF HARD LINKS > 1";
    }
    if (why) {
      close(fd);
      ignored(shown, *why);
      return true;
    }
    platform::ReadFailure failure;
    auto text = platform::ReadRegularFd(fd, shown, kMaxCrontabBytes, nullptr, &failure);
    close(fd);
    if (failure == platform::ReadFailure::kTooLarge) {
      ignored(shown, fmt::format("larger than {} MiB", kMaxCrontabBytes >> 20));
      return true;
    }
    if (!text) return Error{text.error()};
    // The same file is not parsed again unless a user it named came or went. "The same": the
    // same inode, change time (no user can set it) and size, and text of the same hash. The
    // text itself kept would be another copy of every crontab (1,000,000 entries: 80 MB in
    // each shard).
    const FileVersion version{info.st_dev,         info.st_ino,
                              info.st_ctim.tv_sec, info.st_ctim.tv_nsec,
                              text->size(),        std::hash<std::string_view>{}(*text)};
    auto last = last_files.find(shown);
    ParsedFile file;
    if (everything == nullptr && last != last_files.end() && last->second.version == version &&
        users.AnswersAsBefore(last->second.users)) {
      file = std::move(last->second);
    } else {
      file = Parse(*text, shown, kind, user, users, everything);
      file.version = version;
    }
    snapshot.problems.insert(snapshot.problems.end(), file.problems.begin(), file.problems.end());
    if (!file.ignored_because.empty()) {
      ignored(shown, file.ignored_because);
    } else {
      entries.Append(file.logged, static_cast<std::uint32_t>(snapshot.objects.size()));
      snapshot.objects.insert(snapshot.objects.end(), file.objects.begin(), file.objects.end());
    }
    if (everything == nullptr) parsed_files_.emplace(shown, std::move(file));
    return true;
  };

  std::size_t missing = 0;
  for (const std::string& path : options_.paths) {
    std::string real = options_.root + path;
    struct stat info {};
    if (stat(real.c_str(), &info) != 0) {
      if (errno != ENOENT) return Error{fmt::format("cannot read {}: {}", path, Errno(errno))};
      ++missing;
      snapshot.problems.push_back(
          MakeProblem(Reason::kPathNotFound, fmt::format("{} does not exist", path)));
      continue;
    }
    if (!S_ISDIR(info.st_mode)) {
      auto read = read_file(real, path, KindOf(path, false));
      if (!read) return Error{read.error()};
      continue;
    }
    DIR* directory = opendir(real.c_str());
    if (directory == nullptr) return Error{fmt::format("cannot read {}: {}", path, Errno(errno))};
    std::vector<std::string> names;
    errno = 0;
    while (dirent* item = readdir(directory)) {
      if (item->d_name[0] != '.') names.emplace_back(item->d_name);
    }
    int list_error = errno;
    closedir(directory);
    if (list_error != 0) return Error{fmt::format("cannot read {}: {}", path, Errno(list_error))};
    std::sort(names.begin(), names.end());
    CrontabKind kind = KindOf(path, true);
    std::string prefix = path.back() == '/' ? path : path + "/";
    for (const std::string& name : names) {
      if (kind == CrontabKind::kSystem && !CronAcceptsName(name)) {
        report_if_marked(real + "/" + name, prefix + name,
                         "cron reads only names of letters, digits, '_' and '-'");
        continue;
      }
      auto read = read_file(real + "/" + name, prefix + name, kind);
      if (!read) return Error{read.error()};
    }
  }
  if (missing == options_.paths.size()) {
    return Error{fmt::format("none of the crontab paths exists{}",
                             options_.root.empty() ? "" : " under " + options_.root)};
  }
  entries.Sort();
  return entries;
}

Result<bool> CrontabSource::ReadJournal(const ListContext& context, CronLogBatch& batch,
                                        const std::function<void()>& each_chunk) {
  CronLogOptions log_options{context.now, options_.zone};
  std::vector<std::string> argv = {options_.journalctl, "-t", "CRON", "-o", "json", "--no-pager"};
  if (!options_.journal_directory.empty()) {
    argv.push_back("--directory=" + options_.root + options_.journal_directory);
  } else if (!options_.root.empty()) {
    argv.push_back("--root=" + options_.root);
  }
  if (!journal_cursor_.empty()) argv.push_back("--after-cursor=" + journal_cursor_);
  platform::CommandOptions command;
  command.max_line_bytes = kMaxCommandLineBytes;
  command.max_error_bytes = kMaxErrorBytes;
  command.clean_error = SanitizeUtf8;
  return platform::RunCommand(
      argv,
      [&](std::string_view text) {
        auto used = ParseJournalJson(text, log_options, log_state_, batch, &journal_cursor_);
        each_chunk();
        return used;
      },
      context.cancelled, command);
}

Result<bool> CrontabSource::ReadHistory(const ListContext& context, CronLogBatch& batch,
                                        const std::function<void()>& each_chunk) {
  if (options_.journal) return ReadJournal(context, batch, each_chunk);
  CronLogOptions log_options{context.now, options_.zone};
  return tail_.Read(
      [&](std::string_view text) {
        auto used = ParseSyslog(text, log_options, log_state_, batch);
        each_chunk();
        return used;
      },
      [&](bool skip_partial_line) { log_state_.in_long_line = skip_partial_line; },
      context.cancelled);
}

void CrontabSource::InheritCaches(Source& previous) {
  auto* old = dynamic_cast<CrontabSource*>(&previous);
  if (old == nullptr || old->options_.root != options_.root ||
      old->options_.journal != options_.journal || old->options_.syslog != options_.syslog ||
      old->options_.journal_directory != options_.journal_directory) {
    return;  // another log: read it afresh
  }
  tail_.Swap(old->tail_);
  log_state_ = std::move(old->log_state_);
  journal_cursor_ = std::move(old->journal_cursor_);
  news_ = std::move(old->news_);
  reads_ = old->reads_;
}

Result<bool> CrontabSource::ReadRuns(const ListContext& context, const LoggedEntries& logged,
                                     const std::function<std::string_view(std::uint32_t)>& name,
                                     std::map<std::string, News>& news, std::uint64_t read_number,
                                     std::map<std::string, RunHistory>& history) {
  // Runs are tied to entries by user and command, as cron logs them: each name once, in order.
  std::vector<std::uint32_t> objects;
  std::vector<std::string_view> names;
  auto names_of = [&](const CronRun& run) -> const std::vector<std::string_view>& {
    objects.clear();
    names.clear();
    logged.ObjectsOf(run.user, run.command, objects);
    for (std::uint32_t object : objects) {
      // Another shard's runs are never news here: not held until a Used that never keeps them.
      if (options_.shard.Owns(name(object))) names.push_back(name(object));
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  };
  CronLogBatch batch;
  // Applied after each chunk of the log: a long log's runs are never all held at once (the
  // first read of a day's syslog at 100,000 roles held hundreds of MB of them).
  auto apply = [&] {
    for (const CronRun& run : batch.finished) {
      for (std::string_view name : names_of(run)) {
        News& entry = news[std::string(name)];
        entry.history.Add({run.started, run.finished,
                           run.failed ? Run::Outcome::kFailed : Run::Outcome::kSucceeded});
        entry.read = read_number;
      }
    }
    for (const CronRun& run : batch.started_only) {
      for (std::string_view name : names_of(run)) {
        News& entry = news[std::string(name)];
        auto& started = entry.history.last_started;
        started = std::max(started.value_or(run.started), run.started);
        entry.read = read_number;
      }
    }
    batch.finished.clear();
    batch.started_only.clear();
  };
  auto read = ReadHistory(context, batch, apply);
  // The refresher may list twice in one refresh (to confirm an absence) and keeps the last
  // snapshot: log problems are carried over until the refresh's time changes.
  if (context.now != log_problems_now_) log_problems_.Clear();
  log_problems_now_ = context.now;
  log_problems_.Merge(batch.problems);
  if (!read) return read;
  for (const auto& [role, entry] : news) history.emplace(role, entry.history);
  for (const auto& [pid, run] : log_state_.pending) {
    for (std::string_view name : names_of(run)) {
      history[std::string(name)].Add({run.started, std::nullopt});
    }
  }
  return true;
}

Result<CrontabContents> CrontabSource::ListEverything(const ListContext& context) {
  CrontabContents contents;
  SourceSnapshot ignored;
  auto entries = ReadCrontabs(ignored, &contents);
  if (!entries) return Error{entries.error()};
  std::vector<std::string> ids;
  LoggedEntries logged;
  for (const auto& found : contents.entries) {
    if (!found.entry.enabled) continue;
    logged.Add(found.entry.user, LoggedCommand(found.entry.command),
               static_cast<std::uint32_t>(ids.size()));
    ids.push_back(fmt::format("{}:{}", SanitizeUtf8(found.file), found.entry.line));
  }
  logged.Sort();
  std::map<std::string, News> news;
  auto read = ReadRuns(
      context, logged, [&ids](std::uint32_t i) -> std::string_view { return ids[i]; }, news, 1,
      contents.history);
  if (!read) contents.history_error = read.error();
  return contents;
}

void CrontabSource::Used(std::uint64_t news_read, const std::vector<std::string>& kept_roles) {
  for (auto it = news_.begin(); it != news_.end();) {
    bool kept = it->second.read <= news_read &&
                std::binary_search(kept_roles.begin(), kept_roles.end(), it->first);
    it = kept ? news_.erase(it) : std::next(it);
  }
}

Result<SourceSnapshot> CrontabSource::List(const ListContext& context) {
  SourceSnapshot snapshot;
  snapshot.objects.reserve(objects_last_);
  auto entries = ReadCrontabs(snapshot);
  if (!entries) return Error{entries.error()};
  objects_last_ = snapshot.objects.size();
  snapshot.news_read = ++reads_;
  auto read = ReadRuns(
      context, *entries, [&snapshot](std::uint32_t i) { return snapshot.objects[i].role(); }, news_,
      snapshot.news_read, snapshot.history);
  if (!read) {
    // The crontabs still say what exists; the runs read before the failure stay news.
    snapshot.history.clear();
    snapshot.history_error = read.error();
  }
  log_problems_.AppendTo(snapshot.problems);
  snapshot.problems = CapProblems(std::move(snapshot.problems), options_.problems_per_reason);
  return snapshot;
}

Result<CrontabSourceOptions> CrontabOptionsFor(const SourceOptions& options) {
  const auto* settings = options.spec->SettingsAs<CrontabSettings>();
  if (settings == nullptr) return Error{"the settings are not a crontab source's"};
  CrontabSourceOptions crontab;
  crontab.root = settings->root;
  if (!settings->paths.empty()) crontab.paths = settings->paths;
  crontab.syslog = settings->syslog;
  crontab.journal_directory = settings->journal_directory;
  crontab.journal = settings->journal;
  crontab.shard = options.shard;
  return crontab;
}

Result<std::unique_ptr<Source>> MakeCrontabSource(const SourceOptions& options) {
  auto crontab = CrontabOptionsFor(options);
  if (!crontab) return Error{crontab.error()};
  return std::unique_ptr<Source>(std::make_unique<CrontabSource>(std::move(*crontab)));
}

}  // namespace schedwatch::crontab
