#include "schedwatch/platform/file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
