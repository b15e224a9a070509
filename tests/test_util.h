// Helpers shared by the exporter tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace schedwatch::testing {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "schedwatch-test-XXXXXX");
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Compares `actual` with a golden file; SCHEDWATCH_UPDATE_GOLDEN=1 rewrites it instead.
// On a difference, prints a unified diff.
inline void ExpectGolden(const std::string& actual, const std::filesystem::path& golden) {
  if (std::getenv("SCHEDWATCH_UPDATE_GOLDEN") != nullptr) {
    WriteFile(golden, actual);
    return;
  }
  std::string expected = ReadFile(golden);
  if (expected == actual) return;
  std::filesystem::path actual_path =
      std::filesystem::temp_directory_path() / ("actual-" + golden.filename().string());
  WriteFile(actual_path, actual);
  std::string command = "diff -u '" + golden.string() + "' '" + actual_path.string() + "'";
  std::string diff;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) diff.append(buffer, n);
    pclose(pipe);
  }
  ADD_FAILURE() << golden << " differs (rerun with SCHEDWATCH_UPDATE_GOLDEN=1 to accept):\n"
                << diff;
}

}  // namespace schedwatch::testing
