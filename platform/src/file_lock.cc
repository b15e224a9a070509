#include "schedwatch/platform/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace schedwatch::platform {
namespace {

constexpr std::chrono::milliseconds kPoll{100};
constexpr std::size_t kMaxNoteBytes = 255;

}  // namespace

Result<FileLock::Attempt> FileLock::TryLockOpened(int fd, const std::string& path) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0)
    return Attempt{std::unique_ptr<FileLock>(new FileLock(fd)), ""};
  int error = errno;
  if (error != EWOULDBLOCK) {
    close(fd);
    return Error{fmt::format("cannot lock {}: {}", path, std::strerror(error))};
  }
  // A torn read only makes the holder's name less exact.
  char buffer[kMaxNoteBytes + 1];
  ssize_t n = pread(fd, buffer, kMaxNoteBytes, 0);
  close(fd);
  std::string holder = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return Attempt{nullptr, holder};
}

Result<FileLock::Attempt> FileLock::TryLock(const std::string& path, unsigned int mode) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, static_cast<mode_t>(mode));
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  return TryLockOpened(fd, path);
}

Result<FileLock::Attempt> FileLock::TryLockOwnedAt(int directory_fd, const std::string& name,
                                                   const std::string& path, unsigned int mode) {
  int fd = openat(directory_fd, name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                  static_cast<mode_t>(mode));
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) ||
      (info.st_uid != geteuid() && info.st_uid != 0)) {
    close(fd);
    return Error{fmt::format(
        "{} is owned by uid {}, not by this user (uid {}) or root: it cannot guard this role", path,
        info.st_uid, geteuid())};
  }
  return TryLockOpened(fd, path);
}

Result<std::unique_ptr<FileLock>> FileLock::Lock(const std::string& path, unsigned int mode,
                                                 Clock::Duration wait,
                                                 const std::atomic<bool>* cancelled, Clock& clock) {
  auto deadline = clock.Now() + wait;
  for (;;) {
    auto attempt = TryLock(path, mode);
    if (!attempt) return Error{attempt.error()};
    if (attempt->lock) return std::move(attempt->lock);
    auto now = clock.Now();
    if (now >= deadline) return std::unique_ptr<FileLock>();
    if (!clock.SleepFor(std::min<Clock::Duration>(kPoll, deadline - now), cancelled)) {
      return std::unique_ptr<FileLock>();
    }
  }
}

FileLock::~FileLock() { close(fd_); }

void FileLock::WriteNote(std::string_view note) {
  if (ftruncate(fd_, 0) == 0 && !note.empty()) {
    (void)!pwrite(fd_, note.data(), note.size(), 0);
  }
}

}  // namespace schedwatch::platform
