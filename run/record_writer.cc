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

#include "schedwatch/platform/file.h"

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
  auto written = platform::WriteFileAtomically(final_path, RenderRunRecord(record), 0644);
  if (!written) return Error{written.error()};
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
