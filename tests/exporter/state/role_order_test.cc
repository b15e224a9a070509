// RoleOrder: a spec's jobs in role order, found once; RoleList::SortByRole(order) puts a refresh's
// roles in that order without comparing names, and still sorts a list that is not one role per
// job. RoleObjects and RoleList's items: counted blocks shared by their copies.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
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

LiveObject Object(const std::string& id) { return LiveObject(id, "nightly", "0 3 * * *", "", "1"); }

TEST(RoleObjectsTest, CopiesShareOneListThatOutlivesTheFirst) {
  RoleObjects copy;
  EXPECT_TRUE(copy.empty());
  EXPECT_EQ(copy.begin(), copy.end());
  EXPECT_TRUE(copy.SameList(RoleObjects(std::vector<LiveObject>{})));  // none is none
  {
    RoleObjects first(std::vector<LiveObject>{Object("a"), Object("b")});
    copy = first;
    EXPECT_TRUE(copy.SameList(first));
    EXPECT_EQ(&copy[1], &first[1]);
    RoleObjects equal(std::vector<LiveObject>{Object("a"), Object("b")});
    EXPECT_FALSE(equal.SameList(first)) << "equal, but not the same list";
    RoleObjects moved = std::move(first);
    EXPECT_TRUE(moved.SameList(copy));
  }
  ASSERT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy[0].id(), "a");
  EXPECT_EQ(copy[1].id(), "b");
}

// A list whose making fails part way frees what it made (ASan's leak check says so) and is not
// made.
TEST(RoleObjectsTest, AFailedMakingFreesTheObjectsMade) {
  auto make = [](std::size_t i) {
    if (i == 2) throw std::runtime_error("no third");
    return Object(std::string(100, static_cast<char>('a' + i)));  // texts of their own
  };
  EXPECT_THROW(RoleObjects(3, make), std::runtime_error);
  RoleObjects two(2, make);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].id(), std::string(100, 'b'));
}

TEST(RoleListTest, MutableCopiesARoleOnlyWhileItIsShared) {
  auto spec = SpecOf({"nightly", "backup"});
  RoleList published = ListOf(*spec, {0, 1});
  RoleList next;
  for (auto it = published.begin(); it != published.end(); ++it) next.push_back(it.item());
  EXPECT_EQ(&next[0], &published[0]);
  next.Mutable(0).status.desired_since = 7;  // shared: copied first
  EXPECT_NE(&next[0], &published[0]);
  EXPECT_EQ(published[0].status.desired_since, 0);
  const RoleResult* own = &next[0];
  next.Mutable(0).status.desired_since = 8;  // its own now: edited in place
  EXPECT_EQ(&next[0], own);
  EXPECT_EQ(next[0].status.desired_since, 8);
  EXPECT_EQ(next[1].job->role, "backup");
}

}  // namespace
}  // namespace schedwatch
