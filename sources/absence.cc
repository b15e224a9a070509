#include "sources/absence.h"

#include <string_view>
#include <unordered_set>

namespace schedwatch {

std::set<std::string> RolesWithoutObject(const std::vector<std::string>& roles,
                                         const std::vector<LiveObject>& objects) {
  std::unordered_set<std::string_view> present;
  present.reserve(objects.size());
  for (const auto& object : objects) present.insert(object.role);
  std::set<std::string> absent;
  for (const auto& role : roles) {
    if (!present.count(role)) absent.insert(role);
  }
  return absent;
}

AbsenceReads CombineReads(const std::vector<std::string>& roles, Result<SourceSnapshot> first,
                          std::optional<Result<SourceSnapshot>> second) {
  AbsenceReads reads;
  reads.reads = second ? 2 : 1;
  if (!first) {
    reads.snapshot = std::move(first);
    return reads;
  }
  reads.absent_in_first_read = RolesWithoutObject(roles, first->objects);
  if (!second) {
    // One read only: nothing was absent, or nobody looked again; either way nothing is confirmed.
    reads.snapshot = std::move(first);
    return reads;
  }
  for (auto& problem : first->problems) {
    if (problem.recovered) reads.recovered_in_first_read.push_back(std::move(problem));
  }
  reads.snapshot = std::move(*second);
  if (!reads.snapshot) return reads;
  std::vector<std::string> candidates(reads.absent_in_first_read.begin(),
                                      reads.absent_in_first_read.end());
  reads.confirmed_absent = RolesWithoutObject(candidates, reads.snapshot->objects);
  return reads;
}

AbsenceReads ConfirmAbsence(const std::vector<std::string>& roles,
                            const std::function<Result<SourceSnapshot>()>& read,
                            const std::function<bool()>& wait) {
  Result<SourceSnapshot> first = read();
  if (!first || RolesWithoutObject(roles, first->objects).empty()) {
    return CombineReads(roles, std::move(first), std::nullopt);
  }
  Result<SourceSnapshot> second = wait() ? read() : Result<SourceSnapshot>(Error{"cancelled"});
  return CombineReads(roles, std::move(first), std::move(second));
}

}  // namespace schedwatch
