// RoleOrder: a spec's jobs in role order, found once; RoleList::SortByRole(order) puts a refresh's
// roles in that order without comparing names, and still sorts a list that is not one role per
// job.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "exporter/state/state.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

std::shared_ptr<const Spec> SpecOf(const std::vector<std::string>& roles) {
  std::string text = "version: 1\nsources:\n  snap:\n    type: file\n    path: /x.yaml\njobs:\n";
  for (const std::string& role : roles) {
    text +=
        "  - {role: " + role + ", source: snap, schedule: \"0 3 * * *\", spec_version: \"1\"}\n";
  }
  auto spec = ParseSpec(text, "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return std::make_shared<const Spec>(std::move(*spec));
}

std::vector<std::string> Roles(const RoleList& list) {
  std::vector<std::string> roles;
  for (const RoleResult& role : list) roles.push_back(role.job->role);
  return roles;
}

RoleList ListOf(const Spec& spec, const std::vector<std::size_t>& jobs) {
  RoleList list;
  for (std::size_t job : jobs) {
    RoleResult role;
    role.job = &spec.jobs[job];
    list.push_back(std::move(role));
  }
  return list;
}

TEST(RoleOrderTest, JobsAndRanksFollowTheRolesNotTheFile) {
  auto spec = SpecOf({"nightly", "backup", "retry", "audit"});
  RoleOrder order(*spec);
  EXPECT_EQ(order.jobs(), (std::vector<std::uint32_t>{3, 1, 0, 2}));
  EXPECT_EQ(order.Rank(spec->jobs[0]), 2u);
  EXPECT_EQ(order.Rank(spec->jobs[3]), 0u);
}

TEST(RoleOrderTest, ARefreshsRolesArePlacedAndOthersSorted) {
  auto spec = SpecOf({"nightly", "backup", "retry", "audit"});
  RoleOrder order(*spec);
  const std::vector<std::string> sorted = {"audit", "backup", "nightly", "retry"};

  RoleList observed = ListOf(*spec, {0, 1, 2, 3});  // one per job, in the spec's order
  const RoleResult* nightly = &*observed.begin();
  observed.SortByRole(order);
  EXPECT_EQ(Roles(observed), sorted);
  EXPECT_EQ(&observed[2], nightly) << "the same role, moved, not copied";

  RoleList some = ListOf(*spec, {2, 0, 3});
  some.SortByRole(order);
  EXPECT_EQ(Roles(some), (std::vector<std::string>{"audit", "nightly", "retry"}));

  // As many as the jobs, but one twice: placing would lose a role, so it is sorted.
  RoleList twice = ListOf(*spec, {2, 0, 3, 0});
  twice.SortByRole(order);
  EXPECT_EQ(Roles(twice), (std::vector<std::string>{"audit", "nightly", "nightly", "retry"}));

  RoleList by_name = ListOf(*spec, {0, 1, 2, 3});
  by_name.SortByRole();
  EXPECT_EQ(Roles(by_name), sorted);
}

}  // namespace
}  // namespace schedwatch
