#include "run/record_writer.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace schedwatch::run {
namespace {

std::string Errno() { return std::strerror(errno); }

}  // namespace

Result<bool> MakeDirectories(const std::string& path, mode_t mode) {
  if (path.empty()) return Error{"empty directory name"};
  for (std::size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      return Error{fmt::format("cannot create {}: {}", prefix, Errno())};
    }
  }
  struct stat info {};
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Error{fmt::format("{} is not a directory", path)};
  }
  return true;
}

Result<bool> WriteRunRecord(const std::string& directory, const RunRecord& record) {
  if (auto made = MakeDirectories(directory, 0755); !made) return made;
  std::string name = RunRecordFileName(record);
  std::string final_path = directory + "/" + name;
  std::string temporary = fmt::format("{}/.{}.{}.tmp", directory, name, getpid());
  std::string text = RenderRunRecord(record);
  int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Error{fmt::format("cannot write {}: {}", temporary, Errno())};
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = Errno();
      close(fd), unlink(temporary.c_str());
      return Error{fmt::format("cannot write {}: {}", temporary, error)};
    }
    written += static_cast<std::size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    std::string error = Errno();
    unlink(temporary.c_str());
    return Error{fmt::format("cannot write {}: {}", temporary, error)};
  }
  if (rename(temporary.c_str(), final_path.c_str()) != 0) {
    std::string error = Errno();
    unlink(temporary.c_str());
    return Error{fmt::format("cannot rename to {}: {}", final_path, error)};
  }
  // The rename itself is durable once the directory is synced.
  int dir = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return true;
}

void PruneRunRecords(const std::string& directory, std::size_t keep) {
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 5 && name[0] != '.' && name.compare(name.size() - 5, 5, ".json") == 0) {
      names.push_back(std::move(name));
    }
  }
  closedir(dir);
  if (names.size() <= keep) return;
  std::sort(names.begin(), names.end());
  for (std::size_t i = 0; i + keep < names.size(); ++i) {
    unlink((directory + "/" + names[i]).c_str());
  }
}

}  // namespace schedwatch::run
