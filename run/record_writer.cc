#include "run/record_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

namespace schedwatch::run {
namespace {

std::string Errno(int error) { return std::strerror(error); }

bool WriteAll(int fd, std::string_view content, off_t offset) {
  while (!content.empty()) {
    ssize_t n = pwrite(fd, content.data(), content.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<std::size_t>(n));
    offset += n;
  }
  return true;
}

// JSON allows whitespace after the value: a record padded with spaces parses the same.
std::string Padded(std::string text, std::size_t size) {
  if (text.size() < size) text.insert(text.size() - 1, size - text.size(), ' ');
  return text;
}

}  // namespace

Result<bool> MakeDirectories(const std::string& path, mode_t mode) {
  if (path.empty()) return Error{"empty directory name"};
  for (std::size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return Error{fmt::format("cannot create {}: {}", prefix, Errno(errno))};
    }
  }
  struct stat info {};
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Error{fmt::format("{} is not a directory", path)};
  }
  return true;
}

Result<platform::UniqueFd> OpenOwnDirectory(const std::string& parent, const std::string& name) {
  platform::ReadFailure failure;
  auto base = platform::OpenGuarded(parent, platform::OpenKind::kDirectory, &failure);
  if (!base && failure == platform::ReadFailure::kNotFound) {
    if (auto made = MakeDirectories(parent, 0755); !made) return Error{made.error()};
    base = platform::OpenGuarded(parent, platform::OpenKind::kDirectory, &failure);
  }
  if (!base) return Error{base.error()};
  const std::string path = parent + "/" + name;
  if (mkdirat(base->get(), name.c_str(), 0755) != 0 && errno != EEXIST) {
    return Error{fmt::format("cannot create {}: {}", path, Errno(errno))};
  }
  platform::UniqueFd fd(
      openat(base->get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    int error = errno;
    struct stat info {};
    if (fstatat(base->get(), name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISDIR(info.st_mode)) {
      return Error{fmt::format("{} is {} (owned by uid {}), not a directory: refusing to use it",
                               path, platform::DescribeFileType(info.st_mode), info.st_uid)};
    }
    return Error{fmt::format("cannot open {}: {}", path, Errno(error))};
  }
  struct stat info {};
  if (fstat(fd.get(), &info) != 0)
    return Error{fmt::format("cannot open {}: {}", path, Errno(errno))};
  if (info.st_uid != geteuid() && info.st_uid != 0) {
    return Error{
        fmt::format("{} is owned by uid {}, not by this user (uid {}) or root: refusing to use it",
                    path, info.st_uid, geteuid())};
  }
  return fd;
}

Result<RecordDirectory> RecordDirectory::Open(const std::string& record_dir,
                                              const std::string& role) {
  auto fd = OpenOwnDirectory(record_dir, role);
  if (!fd) return Error{fd.error()};
  RecordDirectory directory;
  directory.path_ = record_dir + "/" + role;
  directory.fd_ = std::move(*fd);
  return directory;
}

Result<bool> RecordDirectory::Write(const RunRecord& record) {
  static std::atomic<unsigned long> sequence{0};
  const std::string name = RunRecordFileName(record);
  std::string text = RenderRunRecord(record);
  if (record.state == RunRecord::State::kRunning) text = Padded(text, kReservedRecordBytes);
  const std::string temporary = fmt::format(".{}.{}.{}.tmp", name, getpid(), ++sequence);
  int fd = openat(fd_.get(), temporary.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  int error = 0;
  if (fd >= 0) {
    bool written = WriteAll(fd, text, 0) && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    error = errno;
    if (close(fd) != 0 && written) written = false, error = errno;
    if (written && renameat(fd_.get(), temporary.c_str(), fd_.get(), name.c_str()) == 0) {
      fsync(fd_.get());
      return true;
    }
    if (written) error = errno;
    unlinkat(fd_.get(), temporary.c_str(), 0);
  } else {
    error = errno;
  }
  // No room for a new file: the bytes reserved when the run started, or the spare.
  auto in_place = WriteInPlace(name, text, record.state != RunRecord::State::kFinished);
  if (in_place) return true;
  return Error{
      fmt::format("cannot write {}/{}: {}; {}", path_, name, Errno(error), in_place.error())};
}

Result<bool> RecordDirectory::WriteInPlace(const std::string& name, const std::string& text,
                                           bool from_spare) {
  int fd = openat(fd_.get(), name.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT && from_spare) {
    if (renameat(fd_.get(), kSpareName, fd_.get(), name.c_str()) != 0) {
      return Error{fmt::format("no reserved space either ({}: {})", kSpareName, Errno(errno))};
    }
    fd = openat(fd_.get(), name.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) return Error{fmt::format("no reserved space either ({})", Errno(errno))};
  struct stat info {};
  bool fits = fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
              static_cast<std::size_t>(info.st_size) >= text.size() && info.st_uid == geteuid();
  if (!fits) {
    close(fd);
    return Error{"no reserved space either (the reserved record is too small or not ours)"};
  }
  std::string padded = Padded(text, static_cast<std::size_t>(info.st_size));
  bool written = WriteAll(fd, padded, 0) && fsync(fd) == 0;
  int error = errno;
  close(fd);
  if (!written) return Error{fmt::format("the reserved record: {}", Errno(error))};
  return true;
}

void RecordDirectory::Prune(std::size_t keep) {
  int listing = dup(fd_.get());
  DIR* dir = listing >= 0 ? fdopendir(listing) : nullptr;
  if (dir == nullptr) {
    if (listing >= 0) close(listing);
    return;
  }
  rewinddir(dir);
  std::vector<std::string> names;
  bool spare = false;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name == kSpareName) spare = true;
    if (name.size() > 5 && name[0] != '.' && name.compare(name.size() - 5, 5, ".json") == 0) {
      names.push_back(std::move(name));
    }
  }
  closedir(dir);
  if (names.size() > keep) {
    std::sort(names.begin(), names.end());
    for (std::size_t i = 0; i + keep < names.size(); ++i) {
      struct stat info {};
      // Only files: unlinkat never follows a link, and removes nothing outside this directory.
      if (fstatat(fd_.get(), names[i].c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
          !S_ISDIR(info.st_mode)) {
        unlinkat(fd_.get(), names[i].c_str(), 0);
      }
    }
  }
  if (!spare) {
    int fd =
        openat(fd_.get(), kSpareName, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0) {
      if (!WriteAll(fd, std::string(kReservedRecordBytes, ' '), 0) || fsync(fd) != 0) {
        unlinkat(fd_.get(), kSpareName, 0);  // a short spare would only mislead
      }
      close(fd);
    }
  }
}

namespace {

Result<RecordDirectory> OpenPath(const std::string& directory) {
  auto slash = directory.rfind('/');
  if (slash == std::string::npos) return RecordDirectory::Open(".", directory);
  return RecordDirectory::Open(slash == 0 ? "/" : directory.substr(0, slash),
                               directory.substr(slash + 1));
}

}  // namespace

Result<bool> WriteRunRecord(const std::string& directory, const RunRecord& record) {
  auto opened = OpenPath(directory);
  if (!opened) return Error{opened.error()};
  return opened->Write(record);
}

void PruneRunRecords(const std::string& directory, std::size_t keep) {
  if (auto opened = OpenPath(directory)) opened->Prune(keep);
}

}  // namespace schedwatch::run
