#include "schedwatch/platform/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace schedwatch::platform {
namespace {

// Small enough that a cancelled read stops within milliseconds, large enough to be cheap.
constexpr std::size_t kChunkBytes = 1u << 20;

std::string Limit(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

Result<std::string> Fail(ReadFailure* failure, ReadFailure kind, const std::string& path,
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

Result<std::string> ReadRegularFd(int fd, const std::string& path, std::size_t max_bytes,
                                  const std::atomic<bool>* cancelled, ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  struct stat info {};
  if (fstat(fd, &info) != 0) return Fail(failure, ReadFailure::kOpen, path, std::strerror(errno));
  if (!S_ISREG(info.st_mode)) {
    return Fail(failure, ReadFailure::kNotRegular, path,
                fmt::format("it is {}, not a regular file", DescribeFileType(info.st_mode)));
  }
  if (info.st_size < 0 || static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    return Fail(
        failure, ReadFailure::kTooLarge, path,
        fmt::format("it is {} bytes, more than the limit of {}", info.st_size, Limit(max_bytes)));
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(info.st_size));
  // Up to max_bytes + 1, so that a file that grew since fstat is still refused, not cut.
  while (text.size() <= max_bytes) {
    if (cancelled != nullptr && cancelled->load()) {
      return Fail(failure, ReadFailure::kCancelled, path, "cancelled");
    }
    std::size_t want = std::min(kChunkBytes, max_bytes + 1 - text.size());
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
  return Fail(failure, ReadFailure::kTooLarge, path,
              fmt::format("it grew past the limit of {} while it was read", Limit(max_bytes)));
}

Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes,
                                    const std::atomic<bool>* cancelled, ReadFailure* failure) {
  if (failure != nullptr) *failure = ReadFailure::kNone;
  if (cancelled != nullptr && cancelled->load()) {
    return Fail(failure, ReadFailure::kCancelled, path, "cancelled");
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    return Fail(failure, error == ENOENT ? ReadFailure::kNotFound : ReadFailure::kOpen, path,
                std::strerror(error));
  }
  auto text = ReadRegularFd(fd, path, max_bytes, cancelled, failure);
  close(fd);
  return text;
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
    if (n <= 0) return false;
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 unsigned int mode, Existing existing) {
  // Unique per process and call: two threads writing the same path never share a temporary.
  static std::atomic<unsigned long> sequence{0};
  auto slash = path.rfind('/');
  std::string directory =
      slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1));
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temporary = fmt::format("{}/.{}.{}.{}.tmp", directory, name, getpid(), ++sequence);
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error{fmt::format("cannot write {}: {}", temporary, Errno(errno))};
  bool written =
      WriteAll(fd, content) && fchmod(fd, static_cast<mode_t>(mode)) == 0 && fsync(fd) == 0;
  int error = errno;
  if (close(fd) != 0 && written) written = false, error = errno;
  if (!written) {
    unlink(temporary.c_str());
    return Error{fmt::format("cannot write {}: {}", temporary, Errno(error))};
  }
  bool created = true;
  if (existing == Existing::kReplace) {
    if (rename(temporary.c_str(), path.c_str()) != 0) {
      error = errno;
      unlink(temporary.c_str());
      return Error{fmt::format("cannot replace {}: {}", path, Errno(error))};
    }
  } else {
    // link() fails with EEXIST instead of replacing.
    int linked = link(temporary.c_str(), path.c_str());
    error = errno;
    unlink(temporary.c_str());
    if (linked != 0 && error != EEXIST) {
      return Error{fmt::format("cannot create {}: {}", path, Errno(error))};
    }
    created = linked == 0;
  }
  // The new name is durable once the directory is synced.
  int dir = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return created;
}

}  // namespace schedwatch::platform
