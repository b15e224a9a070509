#include "sources/systemd/unit_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "schedwatch/platform/file.h"

namespace schedwatch::systemd {
namespace {

constexpr std::string_view kTemporaryPrefix = ".schedwatch-";
constexpr std::string_view kTemporarySuffix = ".tmp";

std::string Why(int error) { return std::strerror(error); }

bool WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Content, exact mode and data on disk before the file gets a name.
Result<bool> Fill(int fd, std::string_view content, const std::string& what) {
  if (!WriteAll(fd, content) || fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
    return Error{fmt::format("cannot write {}: {}", what, Why(errno))};
  }
  return true;
}

// The name survives a crash once the directory is synced.
void SyncDirectory(int directory) {
  platform::UniqueFd fd(openat(directory, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) fsync(fd.get());
}

Result<Placed> CreateUnnamed(int directory, const std::string& name, const std::string& path,
                             std::string_view content, bool& unsupported) {
  platform::UniqueFd fd(openat(directory, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    // EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP: a file system without it.
    unsupported = errno == EOPNOTSUPP || errno == EISDIR;
    return Error{fmt::format("cannot write {}: {}", path, Why(errno))};
  }
  if (auto filled = Fill(fd.get(), content, path); !filled) return Error{filled.error()};
  std::string self = fmt::format("/proc/self/fd/{}", fd.get());
  int r = linkat(AT_FDCWD, self.c_str(), directory, name.c_str(), AT_SYMLINK_FOLLOW);
  if (r != 0 && errno == ENOENT) {  // no /proc: AT_EMPTY_PATH, which root may use
    r = linkat(fd.get(), "", directory, name.c_str(), AT_EMPTY_PATH);
  }
  if (r != 0) {
    if (errno == EEXIST) return Placed::kTaken;
    return Error{fmt::format("cannot create {}: {}", path, Why(errno))};
  }
  SyncDirectory(directory);
  return Placed::kCreated;
}

Result<Placed> CreateNamed(int directory, const std::string& name, const std::string& path,
                           std::string_view content) {
  std::string temporary =
      fmt::format("{}{}.{}{}", kTemporaryPrefix, getpid(), name, kTemporarySuffix);
  platform::UniqueFd fd(openat(directory, temporary.c_str(),
                               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Error{fmt::format("cannot write {}: {}", temporary, Why(errno))};
  auto filled = Fill(fd.get(), content, temporary);
  fd = platform::UniqueFd();
  int r = filled ? linkat(directory, temporary.c_str(), directory, name.c_str(), 0) : -1;
  int error = errno;
  unlinkat(directory, temporary.c_str(), 0);
  if (!filled) return Error{filled.error()};
  if (r != 0) {
    if (error == EEXIST) return Placed::kTaken;
    return Error{fmt::format("cannot create {}: {}", path, Why(error))};
  }
  SyncDirectory(directory);
  return Placed::kCreated;
}

}  // namespace

Result<Placed> CreateUnitFile(const std::string& directory, const std::string& name,
                              std::string_view content, bool named_temporary) {
  std::string path = directory + "/" + name;
  platform::UniqueFd dir(open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return Error{fmt::format("cannot open {}: {}", directory, Why(errno))};
  if (!named_temporary) {
    bool unsupported = false;
    auto placed = CreateUnnamed(dir.get(), name, path, content, unsupported);
    if (placed || !unsupported) return placed;
  }
  return CreateNamed(dir.get(), name, path, content);
}

int RemoveStaleTemporaries(const std::string& directory) {
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  while (const dirent* entry = readdir(dir)) {
    std::string_view name(entry->d_name);
    if (name.size() <= kTemporaryPrefix.size() + kTemporarySuffix.size() ||
        name.compare(0, kTemporaryPrefix.size(), kTemporaryPrefix) != 0 ||
        name.compare(name.size() - kTemporarySuffix.size(), kTemporarySuffix.size(),
                     kTemporarySuffix) != 0) {
      continue;
    }
    // .schedwatch-PID.NAME.tmp: stale when no process PID is left (or it is this one, which
    // writes none while it cleans up).
    std::string rest(name.substr(kTemporaryPrefix.size()));
    char* end = nullptr;
    long pid = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str() || *end != '.' || pid <= 0 || pid > std::numeric_limits<pid_t>::max()) {
      continue;  // no pid: not ours
    }
    bool alive = pid != getpid() && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (alive) continue;
    struct stat st {};
    if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (unlinkat(dirfd(dir), entry->d_name, 0) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

bool IsMask(const std::string& directory, const std::string& name) {
  std::string path = directory + "/" + name;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    char target[16];
    ssize_t n = readlink(path.c_str(), target, sizeof target);
    if (n == 9 && std::string_view(target, 9) == "/dev/null") return true;
    if (stat(path.c_str(), &st) != 0) return false;
  }
  if (S_ISCHR(st.st_mode)) return major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
  return S_ISREG(st.st_mode) && st.st_size == 0;
}

std::string IntentPath(const std::string& directory, const std::string& timer) {
  return fmt::format("{}/.schedwatch.{}.creating", directory, timer);
}

}  // namespace schedwatch::systemd
