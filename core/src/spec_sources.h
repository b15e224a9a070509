#pragma once

#include <map>
#include <string>
#include <vector>

namespace schedwatch {

struct SourceKey {
  enum Kind { kString, kList, kPath, kPathList, kDuration, kBool };
  std::string name;
  Kind kind;
  bool required;
};

const std::map<std::string, std::vector<SourceKey>, std::less<>>& SourceKeyTable();

}  // namespace schedwatch
