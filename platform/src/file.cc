#include "schedwatch/platform/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <vector>

#include "schedwatch/platform/replace_file.h"

namespace schedwatch::platform {
namespace {

// Small enough that a cancelled read stops within milliseconds, large enough to be cheap.
constexpr std::size_t kChunkBytes = 1u << 20;

std::string Limit(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

Error Fail(ReadFailure* failure, ReadFailure kind, const std::string& path,
           const std::string& why) {
  if (failure != nullptr) *failure = kind;
  return Error{fmt::format("cannot read {}: {}", path, why)};
}

}  // namespace

std::string DescribeFileType(unsigned int st_mode) {
  switch (st_mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

namespace {

// The size of the regular file `fd`, when it is one of at most max_bytes.
Result<std::size_t> RegularSize(int fd, const std::string& path, std::size_t max_bytes,
                                ReadFailure* failure) {
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    return Fail(failure, ReadFailure::kOpen, path, std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) {
    return Fail(failure, ReadFailure::kNotRegular, path,
                fmt::format("it is {}, not a regular file", DescribeFileType(info.st_mode)));
  }
  if (info.st_size < 0 || static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    return Fail(
        failure, ReadFailure::kTooLarge, path,
        fmt::format("it is {} bytes, more than the limit of {}", info.st_size, Limit(max_bytes)));
  }
  return static_cast<std::size_t>(info.st_size);
}

int OpenNonBlocking(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
}

std::string GrewPast(std::size_t max_bytes) {
  return fmt::format("it grew past the limit of {} while it was read", Limit(max_bytes));
}

}  // namespace

Result<std::string> ReadRegularFd(int fd, const std::string& path, std::size_t max_bytes,
                                  const std::atomic<bool>* cancelled, ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  auto size = RegularSize(fd, path, max_bytes, failure);
  if (!size) return Error{size.error()};
  std::string text;
  text.reserve(*size);
  // Up to max_bytes + 1, so that a file that grew since fstat is still refused, not cut.
  while (text.size() <= max_bytes) {
    if (cancelled != nullptr && cancelled->load()) {
      return Fail(failure, ReadFailure::kCancelled, path, "cancelled");
    }
    // The size fstat gave and one byte more (to see the end, or that the file grew), not a
    // whole chunk: a chunk's room is zeroed as it is made (100 crontabs of 90 KB each made
    // 1 MiB of it each).
    std::size_t expected = *size + 1;
    std::size_t want = std::min(kChunkBytes, max_bytes + 1 - text.size());
    if (text.size() < expected) want = std::min(want, expected - text.size());
    std::size_t old_size = text.size();
    text.resize(old_size + want);
    ssize_t n = read(fd, text.data() + old_size, want);
    if (n < 0) {
      text.resize(old_size);
      if (errno == EINTR) continue;
      return Fail(failure, ReadFailure::kRead, path, std::strerror(errno));
    }
    text.resize(old_size + static_cast<std::size_t>(n));
    if (n == 0) return text;
  }
  return Fail(failure, ReadFailure::kTooLarge, path, GrewPast(max_bytes));
}

Result<UniqueFd> OpenRegularFile(const std::string& path, std::size_t max_bytes, std::size_t* size,
                                 ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  UniqueFd fd(OpenNonBlocking(path));
  if (fd.get() < 0) {
    int error = errno;
    return Fail(failure, error == ENOENT ? ReadFailure::kNotFound : ReadFailure::kOpen, path,
                std::strerror(error));
  }
  auto bytes = RegularSize(fd.get(), path, max_bytes, failure);
  if (!bytes) return Error{bytes.error()};
  *size = *bytes;
  return fd;
}

Result<std::size_t> ReadPiece(int fd, const std::string& path, char* buffer, std::size_t size,
                              std::size_t max_bytes, std::size_t* total, ReadFailure* failure) {
  for (;;) {
    ssize_t n = read(fd, buffer, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail(failure, ReadFailure::kRead, path, std::strerror(errno));
    *total += static_cast<std::size_t>(n);
    if (*total > max_bytes) {
      return Fail(failure, ReadFailure::kTooLarge, path, GrewPast(max_bytes));
    }
    return static_cast<std::size_t>(n);
  }
}

Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes,
                                    const std::atomic<bool>* cancelled, ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  if (cancelled != nullptr && cancelled->load()) {
    return Fail(failure, ReadFailure::kCancelled, path, "cancelled");
  }
  int fd = OpenNonBlocking(path);
  if (fd < 0) {
    int error = errno;
    return Fail(failure, error == ENOENT ? ReadFailure::kNotFound : ReadFailure::kOpen, path,
                std::strerror(error));
  }
  auto text = ReadRegularFd(fd, path, max_bytes, cancelled, failure);
  close(fd);
  return text;
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

namespace {

constexpr int kMaxLinks = 40;  // as the kernel's ELOOP

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return parts;
}

// systemd's unsafe transition: a directory an ordinary user owns holds something another user
// owns. Directories of root and of this user are trusted with their entries.
bool UnsafeStep(const struct stat& directory, const struct stat& entry, uid_t me) {
  if (directory.st_uid == 0 || directory.st_uid == me) return false;
  return entry.st_uid != directory.st_uid;
}

Result<UniqueFd> Refuse(ReadFailure* failure, ReadFailure kind, const std::string& path,
                        const std::string& why) {
  if (failure != nullptr) *failure = kind;
  return Error{fmt::format("cannot read {}: {}", path, why)};
}

}  // namespace

namespace {

// OpenGuarded's walk, from `root` when it is not empty: the walk starts there, absolute link
// targets start there again and ".." stops there, as if it were "/" (a container's root seen
// from the host). `root` itself is opened as given: whoever configured it is trusted.
Result<UniqueFd> OpenGuardedFrom(const std::string& root, const std::string& inner, OpenKind kind,
                                 ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  const std::string path = root + inner;  // for messages
  if (inner.empty()) return Refuse(failure, ReadFailure::kNotFound, path, "empty path");
  const uid_t me = geteuid();
  bool absolute = inner[0] == '/';
  const char* top = root.empty() ? "/" : root.c_str();
  UniqueFd current(open(absolute || !root.empty() ? top : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct stat current_info {};
  if (current.get() < 0 || fstat(current.get(), &current_info) != 0) {
    return Refuse(failure, ReadFailure::kOpen, path, std::strerror(errno));
  }
  const struct stat top_info = current_info;
  std::vector<std::string> parts = Components(inner);
  std::deque<std::string> pending(parts.begin(), parts.end());
  int links = 0;
  std::string name = ".";
  while (!pending.empty()) {
    name = std::move(pending.front());
    pending.pop_front();
    if (name == "." || (name == ".." && !root.empty() && current_info.st_dev == top_info.st_dev &&
                        current_info.st_ino == top_info.st_ino)) {
      name = ".";
      if (pending.empty()) break;
      continue;
    }
    UniqueFd next(openat(current.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      int error = errno;
      return Refuse(failure, error == ENOENT ? ReadFailure::kNotFound : ReadFailure::kOpen, path,
                    std::strerror(error));
    }
    struct stat info {};
    if (fstat(next.get(), &info) != 0) {
      return Refuse(failure, ReadFailure::kOpen, path, std::strerror(errno));
    }
    if (S_ISLNK(info.st_mode)) {
      if (info.st_uid != 0 && info.st_uid != me) {
        return Refuse(failure, ReadFailure::kUnsafe, path,
                      fmt::format("\"{}\" is a symbolic link owned by uid {}; only links that root "
                                  "or uid {} own are followed here",
                                  name, info.st_uid, me));
      }
      if (++links > kMaxLinks) {
        return Refuse(failure, ReadFailure::kOpen, path, std::strerror(ELOOP));
      }
      std::vector<char> target(4096);
      ssize_t n = readlinkat(next.get(), "", target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size()) {
        return Refuse(failure, ReadFailure::kOpen, path,
                      n < 0 ? std::strerror(errno) : "a symbolic link too long");
      }
      std::string text(target.data(), static_cast<std::size_t>(n));
      std::vector<std::string> more = Components(text);
      pending.insert(pending.begin(), more.begin(), more.end());
      if (!text.empty() && text[0] == '/') {
        current = UniqueFd(open(top, O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (current.get() < 0 || fstat(current.get(), &current_info) != 0) {
          return Refuse(failure, ReadFailure::kOpen, path, std::strerror(errno));
        }
      }
      if (pending.empty()) name = ".";
      continue;
    }
    if (name != ".." && UnsafeStep(current_info, info, me)) {
      return Refuse(failure, ReadFailure::kUnsafe, path,
                    fmt::format("\"{}\" is owned by uid {}, in a directory owned by uid {}", name,
                                info.st_uid, current_info.st_uid));
    }
    if (!pending.empty()) {
      if (!S_ISDIR(info.st_mode)) {
        return Refuse(failure, ReadFailure::kOpen, path, std::strerror(ENOTDIR));
      }
      current = std::move(next);
      current_info = info;
      continue;
    }
    // The last component: opened for real from the directory checked, then compared with what
    // was checked, so a swap in between is refused rather than followed.
    if (kind == OpenKind::kDirectory && !S_ISDIR(info.st_mode)) {
      return Refuse(failure, ReadFailure::kNotRegular, path,
                    fmt::format("it is {}, not a directory", DescribeFileType(info.st_mode)));
    }
    if (kind == OpenKind::kRegularFile) {
      if (!S_ISREG(info.st_mode)) {
        return Refuse(failure, ReadFailure::kNotRegular, path,
                      fmt::format("it is {}, not a regular file", DescribeFileType(info.st_mode)));
      }
      if (info.st_nlink > 1 && (current_info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return Refuse(
            failure, ReadFailure::kUnsafe, path,
            fmt::format("it has {} links, in a directory others may write", info.st_nlink));
      }
    }
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                (kind == OpenKind::kDirectory ? O_DIRECTORY : O_NONBLOCK);
    UniqueFd opened(openat(current.get(), name.c_str(), flags));
    struct stat now {};
    if (opened.get() < 0 || fstat(opened.get(), &now) != 0) {
      int error = errno;
      return Refuse(failure, error == ENOENT ? ReadFailure::kNotFound : ReadFailure::kOpen, path,
                    std::strerror(error));
    }
    if (now.st_dev != info.st_dev || now.st_ino != info.st_ino) {
      return Refuse(failure, ReadFailure::kUnsafe, path, "it was replaced while it was opened");
    }
    return opened;
  }
  // The path ended at a directory already walked ("/", ".", "dir/.", a link to a directory).
  if (kind != OpenKind::kDirectory) {
    return Refuse(failure, ReadFailure::kNotRegular, path, "it is a directory, not a regular file");
  }
  UniqueFd opened(openat(current.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (opened.get() < 0) return Refuse(failure, ReadFailure::kOpen, path, std::strerror(errno));
  return opened;
}

}  // namespace

Result<UniqueFd> OpenGuarded(const std::string& path, OpenKind kind, ReadFailure* failure) {
  return OpenGuardedFrom("", path, kind, failure);
}

Result<UniqueFd> OpenGuardedIn(const std::string& root, const std::string& path, OpenKind kind,
                               ReadFailure* failure) {
  return OpenGuardedFrom(root, path, kind, failure);
}

Result<std::string> ReadGuardedFile(const std::string& path, std::size_t max_bytes,
                                    const std::atomic<bool>* cancelled, ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  if (cancelled != nullptr && cancelled->load()) {
    return Fail(failure, ReadFailure::kCancelled, path, "cancelled");
  }
  auto fd = OpenGuarded(path, OpenKind::kRegularFile, failure);
  if (!fd) return Error{fd.error()};
  return ReadRegularFd(fd->get(), path, max_bytes, cancelled, failure);
}

Result<std::string> ReadGuardedFileIn(const std::string& root, const std::string& path,
                                      std::size_t max_bytes, const std::atomic<bool>* cancelled,
                                      ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  if (cancelled != nullptr && cancelled->load()) {
    return Fail(failure, ReadFailure::kCancelled, root + path, "cancelled");
  }
  auto fd = OpenGuardedIn(root, path, OpenKind::kRegularFile, failure);
  if (!fd) return Error{fd.error()};
  return ReadRegularFd(fd->get(), root + path, max_bytes, cancelled, failure);
}

}  // namespace schedwatch::platform

namespace schedwatch::platform {
namespace {

std::string Errno(int error) { return std::strerror(error); }

// Writes all of `content`, through short writes and EINTR.
bool WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

struct Place {
  std::string directory, name;
};

Place PlaceOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {path.substr(0, std::max<std::size_t>(slash, 1)), path.substr(slash + 1)};
}

// The NAME of a temporary WriteFileAtomically made for it, ".NAME.PID.SEQ.tmp" (cron,
// run-parts and systemd skip names with a dot); empty for any other name.
std::string_view TemporaryFor(std::string_view entry) {
  constexpr std::string_view kSuffix = ".tmp";
  if (entry.size() <= 1 + kSuffix.size() || entry[0] != '.' ||
      entry.substr(entry.size() - kSuffix.size()) != kSuffix) {
    return {};
  }
  entry.remove_suffix(kSuffix.size());
  for (int number = 0; number < 2; ++number) {  // SEQ, then PID
    auto dot = entry.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == entry.size() ||
        entry.find_first_not_of("0123456789", dot + 1) != std::string_view::npos) {
      return {};
    }
    entry = entry.substr(0, dot);
  }
  return entry.substr(1);
}

// A temporary of this user, lstat'ed (never followed), opened and locked: no writer holds it.
// The lock is held as long as the descriptor is open.
struct Claimed {
  UniqueFd fd;
  struct stat info {};
};

std::optional<Claimed> Claim(int directory, const char* entry) {
  Claimed claimed;
  if (fstatat(directory, entry, &claimed.info, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(claimed.info.st_mode) || claimed.info.st_uid != geteuid()) {
    return std::nullopt;
  }
  claimed.fd = UniqueFd(openat(directory, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat opened {};
  if (claimed.fd.get() < 0 || fstat(claimed.fd.get(), &opened) != 0 ||
      opened.st_dev != claimed.info.st_dev || opened.st_ino != claimed.info.st_ino ||
      flock(claimed.fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return std::nullopt;
  }
  // Still the name of what was locked (a writer checks the same after taking its lock).
  struct stat again {};
  if (fstatat(directory, entry, &again, AT_SYMLINK_NOFOLLOW) != 0 ||
      again.st_ino != opened.st_ino || again.st_dev != opened.st_dev) {
    return std::nullopt;
  }
  claimed.info = again;
  return claimed;
}

// The names in an open directory (read through a copy of its descriptor).
Result<std::vector<std::string>> Entries(int directory, const std::string& shown) {
  int copy = dup(directory);
  DIR* listing = copy < 0 ? nullptr : fdopendir(copy);
  if (listing == nullptr) {
    int error = errno;
    if (copy >= 0) close(copy);
    return Error{fmt::format("cannot list {}: {}", shown, Errno(error))};
  }
  rewinddir(listing);
  std::vector<std::string> names;
  while (const dirent* entry = readdir(listing)) names.emplace_back(entry->d_name);
  closedir(listing);
  return names;
}

// A temporary nobody else can see: its name is ".NAME.PID.SEQ.tmp", taken exclusively, locked
// for as long as it is written (RemoveStaleTemporaries leaves locked ones alone), and still its
// name once locked (else a cleaner removed it in between: another name is taken).
Result<std::pair<UniqueFd, std::string>> OpenNamedTemporary(int directory, const Place& place) {
  // Unique per process and call: two threads writing the same path never share a temporary.
  static std::atomic<unsigned long> sequence{0};
  for (int attempt = 0;; ++attempt) {
    std::string name = fmt::format(".{}.{}.{}.tmp", place.name, getpid(), ++sequence);
    UniqueFd fd(openat(directory, name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd.get() < 0) {
      return Error{fmt::format("cannot write {}/{}: {}", place.directory, name, Errno(errno))};
    }
    struct stat opened {
    }, named{};
    if (flock(fd.get(), LOCK_EX) == 0 && fstat(fd.get(), &opened) == 0 &&
        fstatat(directory, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
        opened.st_ino == named.st_ino && opened.st_dev == named.st_dev) {
      return std::pair{std::move(fd), std::move(name)};
    }
    if (attempt == 3) {
      return Error{
          fmt::format("cannot write {}/{}: removed while it was written", place.directory, name)};
    }
  }
}

// Content, owner, exact mode (not masked by the umask), then fsync: complete before it is named.
bool Fill(int fd, std::string_view content, const AtomicWrite& how) {
  return WriteAll(fd, content) &&
         (!how.owner || fchown(fd, how.owner->first, how.owner->second) == 0) &&
         fchmod(fd, static_cast<mode_t>(how.mode)) == 0 && fsync(fd) == 0;
}

// The unnamed file `fd` (O_TMPFILE) takes the name, or fails with EEXIST when it is taken.
// AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd is the way without it.
int LinkUnnamed(int fd, int directory, const std::string& name) {
  if (linkat(fd, "", directory, name.c_str(), AT_EMPTY_PATH) == 0) return 0;
  if (errno != ENOENT && errno != EPERM) return -1;
  std::string self = fmt::format("/proc/self/fd/{}", fd);
  return linkat(AT_FDCWD, self.c_str(), directory, name.c_str(), AT_SYMLINK_FOLLOW);
}

bool Unsupported(int error) { return error == EOPNOTSUPP || error == EISDIR || error == EINVAL; }

}  // namespace

Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 unsigned int mode, Existing existing) {
  AtomicWrite how;
  how.mode = mode;
  how.existing = existing;
  return WriteFileAtomically(path, content, how);
}

Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 const AtomicWrite& how) {
  const Place place = PlaceOf(path);
  UniqueFd directory(open(place.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() < 0) return Error{fmt::format("cannot write {}: {}", path, Errno(errno))};
  bool created = true;
  // Keeping an existing file: an unnamed file, filled, then linked to its only name. A kill at
  // any point leaves no file or the complete one, and never a second name for it (cron ignores
  // a cron.d file with two links).
  UniqueFd unnamed;
  if (how.existing == Existing::kKeep) {
    unnamed = UniqueFd(openat(directory.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
    if (unnamed.get() < 0 && !Unsupported(errno)) {
      return Error{fmt::format("cannot write {}: {}", path, Errno(errno))};
    }
  }
  if (unnamed.get() >= 0) {
    if (!Fill(unnamed.get(), content, how)) {
      return Error{fmt::format("cannot write {}: {}", path, Errno(errno))};
    }
    if (how.before_rename) {
      if (auto still = how.before_rename(); !still) return Error{still.error()};
    }
    if (LinkUnnamed(unnamed.get(), directory.get(), place.name) != 0) {
      if (errno != EEXIST) return Error{fmt::format("cannot create {}: {}", path, Errno(errno))};
      created = false;
    }
  } else {
    // A named temporary (replacing, or a file system without O_TMPFILE), renamed into place.
    auto temporary = OpenNamedTemporary(directory.get(), place);
    if (!temporary) return Error{temporary.error()};
    const char* name = temporary->second.c_str();
    auto discard = [&] { unlinkat(directory.get(), name, 0); };
    if (!Fill(temporary->first.get(), content, how)) {
      int error = errno;
      discard();
      return Error{fmt::format("cannot write {}/{}: {}", place.directory, name, Errno(error))};
    }
    if (how.before_rename) {
      if (auto still = how.before_rename(); !still) {
        discard();
        return Error{still.error()};
      }
    }
    int renamed = how.existing == Existing::kReplace
                      ? renameat(directory.get(), name, directory.get(), place.name.c_str())
                      : renameat2(directory.get(), name, directory.get(), place.name.c_str(),
                                  RENAME_NOREPLACE);
    if (renamed != 0 && how.existing == Existing::kKeep && Unsupported(errno)) {
      // Neither O_TMPFILE nor RENAME_NOREPLACE (NFS): link, then unlink the temporary; an
      // interruption in between is what FinishInterruptedCreate completes.
      renamed = linkat(directory.get(), name, directory.get(), place.name.c_str(), 0);
      int error = errno;
      if (renamed == 0) discard();
      errno = error;
    }
    if (renamed != 0) {
      int error = errno;
      discard();
      if (how.existing == Existing::kReplace || error != EEXIST) {
        return Error{fmt::format("cannot {} {}: {}",
                                 how.existing == Existing::kReplace ? "replace" : "create", path,
                                 Errno(error))};
      }
      created = false;
    }
  }
  // The new name is durable once the directory is synced.
  if (created) fsync(directory.get());
  return created;
}

Result<std::size_t> RemoveStaleTemporaries(const std::string& directory_path,
                                           std::string_view prefix) {
  UniqueFd directory(open(directory_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() < 0) {
    return Error{fmt::format("cannot list {}: {}", directory_path, Errno(errno))};
  }
  auto entries = Entries(directory.get(), directory_path);
  if (!entries) return Error{entries.error()};
  std::size_t removed = 0;
  for (const auto& entry : *entries) {
    std::string_view name = TemporaryFor(entry);
    if (name.empty() || name.substr(0, prefix.size()) != prefix) continue;
    auto claimed = Claim(directory.get(), entry.c_str());
    // One link only: a second one is a name someone else may need (FinishInterruptedCreate).
    if (!claimed || claimed->info.st_nlink != 1) continue;
    if (unlinkat(directory.get(), entry.c_str(), 0) == 0) ++removed;
  }
  if (removed > 0) fsync(directory.get());
  return removed;
}

Result<bool> FinishInterruptedCreate(const std::string& path, std::string_view content) {
  const Place place = PlaceOf(path);
  UniqueFd directory(open(place.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory.get() < 0) return Error{fmt::format("cannot read {}: {}", path, Errno(errno))};
  struct stat target {};
  if (fstatat(directory.get(), place.name.c_str(), &target, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(target.st_mode) || target.st_nlink != 2 || target.st_uid != geteuid() ||
      static_cast<std::size_t>(target.st_size) != content.size()) {
    return false;
  }
  auto entries = Entries(directory.get(), place.directory);
  if (!entries) return Error{entries.error()};
  for (const auto& entry : *entries) {
    if (TemporaryFor(entry) != place.name) continue;
    auto claimed = Claim(directory.get(), entry.c_str());
    if (!claimed || claimed->info.st_ino != target.st_ino ||
        claimed->info.st_dev != target.st_dev) {
      continue;
    }
    // The same file under both names: it is what was being written when it holds `content`.
    auto text = ReadRegularFd(claimed->fd.get(), path, content.size());
    if (!text || *text != content) return false;
    if (unlinkat(directory.get(), entry.c_str(), 0) != 0) {
      return Error{fmt::format("cannot remove {}/{}: {}", place.directory, entry, Errno(errno))};
    }
    fsync(directory.get());
    return true;
  }
  return false;
}

namespace {

// The command that makes `directory` for this user: run by root, owned by this user.
std::string MakeDirectoryCommand(const std::string& directory) {
  uid_t self = geteuid();
  if (self == 0) return fmt::format("install -d -m 0700 {}", directory);
  passwd entry{}, *found = nullptr;
  char buffer[4096];
  std::string user = getpwuid_r(self, &entry, buffer, sizeof(buffer), &found) == 0 && found
                         ? std::string(found->pw_name)
                         : std::to_string(self);
  return fmt::format("sudo install -d -m 0700 -o {} {}", user, directory);
}

}  // namespace

Result<bool> EnsureStateDirectory(const std::string& directory) {
  struct stat status {};
  if (lstat(directory.c_str(), &status) == 0) {
    if (S_ISDIR(status.st_mode)) return true;
    return Error{fmt::format("state directory {} is {}, not a directory; move it away, then: {}",
                             directory, S_ISLNK(status.st_mode) ? "a symbolic link" : "a file",
                             MakeDirectoryCommand(directory))};
  }
  auto cannot = [&](const std::string& why) {
    return Error{fmt::format("state directory {} is missing and was not made: {}; make it with: {}",
                             directory, why, MakeDirectoryCommand(directory))};
  };
  if (errno != ENOENT) return cannot(std::strerror(errno));
  std::string trimmed = directory;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  auto slash = trimmed.rfind('/');
  std::string parent = slash == std::string::npos ? "."
                       : slash == 0               ? "/"
                                                  : trimmed.substr(0, slash);
  if (lstat(parent.c_str(), &status) != 0) {
    return cannot(fmt::format("its parent {}: {}", parent, std::strerror(errno)));
  }
  // Only where no one else could have put a link or a directory of theirs in its place.
  if (S_ISLNK(status.st_mode))
    return cannot(fmt::format("its parent {} is a symbolic link", parent));
  if (!S_ISDIR(status.st_mode))
    return cannot(fmt::format("its parent {} is not a directory", parent));
  if (status.st_uid != 0 && status.st_uid != geteuid()) {
    return cannot(fmt::format("its parent {} belongs to uid {}, neither root nor this user", parent,
                              status.st_uid));
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return cannot(fmt::format("its parent {} is writable by other users (mode {:o})", parent,
                              status.st_mode & 07777));
  }
  if (mkdir(directory.c_str(), 0700) != 0 && errno != EEXIST) {
    return cannot(std::strerror(errno));
  }
  // A umask cannot take the owner's own access away from it.
  if (lstat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode) ||
      (status.st_uid == geteuid() && chmod(directory.c_str(), 0700) != 0)) {
    return cannot(std::strerror(errno));
  }
  return true;
}

}  // namespace schedwatch::platform
