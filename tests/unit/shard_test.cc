// The assignment of roles to shards: the published vectors of FNV-1a and jump consistent hash, a
// golden list of role -> shard for N = 1..5 (the same on every platform and run: a change would
// move roles between running exporters), and the movement property.
#include "schedwatch/shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "schedwatch/spec.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

const std::filesystem::path kSourceDir = SCHEDWATCH_SOURCE_DIR;

TEST(ShardTest, Fnv1a64MatchesThePublishedVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(ShardTest, JumpHashMatchesThePublishedVectors) {
  // Those of the Go implementations (github.com/dgryski/go-jump), from the paper's code.
  EXPECT_EQ(JumpConsistentHash(1, 1), 0u);
  EXPECT_EQ(JumpConsistentHash(42, 57), 43u);
  EXPECT_EQ(JumpConsistentHash(0xDEAD10CC, 1), 0u);
  EXPECT_EQ(JumpConsistentHash(0xDEAD10CC, 666), 361u);
  EXPECT_EQ(JumpConsistentHash(256, 1024), 520u);
}

TEST(ShardTest, AssignmentMatchesTheGoldenList) {
  std::vector<std::string> roles = {"backup",
                                    "billing",
                                    "cleanup",
                                    "digest",
                                    "export",
                                    "gate",
                                    "ingest",
                                    "nightly-report",
                                    "partner-feed",
                                    "retry",
                                    "sync",
                                    "a",
                                    "role-0",
                                    "role-1",
                                    "role-2",
                                    "role-99999",
                                    "team.payments/settle",
                                    "ünïcode-rôle"};
  std::string list = "# role, then its shard for N = 1, 2, 3, 4, 5 (tests/unit/shard_test.cc)\n";
  for (const auto& role : roles) {
    list += role;
    for (std::uint32_t n = 1; n <= 5; ++n)
      list += " " + std::to_string(ShardAssignment::Of(role, n));
    list += "\n";
  }
  testing::ExpectGolden(list, kSourceDir / "tests/golden/shard-assignment.txt");
}

TEST(ShardTest, GrowingToNPlusOneMovesAboutOneInNPlusOneAllToTheNewShard) {
  constexpr int kRoles = 100000;
  for (std::uint32_t n = 1; n <= 9; ++n) {
    int moved = 0;
    for (int i = 0; i < kRoles; ++i) {
      std::string role = "role-" + std::to_string(i);
      std::uint32_t before = ShardAssignment::Of(role, n), after = ShardAssignment::Of(role, n + 1);
      ASSERT_LT(before, n);
      if (before == after) continue;
      ++moved;
      ASSERT_EQ(after, n) << role << " moved from " << before << " to another old shard";
    }
    // 1/(N+1) of 100,000: a binomial count, its standard deviation at most 158; 5% is > 15 sd.
    double expected = kRoles / static_cast<double>(n + 1);
    EXPECT_NEAR(moved, expected, expected * 0.05) << "N = " << n;
  }
}

TEST(ShardTest, ShardsSplitTheRolesEvenly) {
  constexpr int kRoles = 100000;
  std::vector<int> counts(7);
  for (int i = 0; i < kRoles; ++i) ++counts[ShardAssignment::Of("role-" + std::to_string(i), 7)];
  for (int count : counts) EXPECT_NEAR(count, kRoles / 7.0, kRoles / 7.0 * 0.05);
}

TEST(ShardTest, SpecOfShardKeepsEachRoleOnExactlyOneShard) {
  Spec whole;
  whole.sources["s"].name = "s";
  for (int i = 0; i < 1000; ++i) {
    JobSpec job;
    job.role = "role-" + std::to_string(i);
    whole.jobs.push_back(job);
  }
  std::vector<int> seen(1000);
  std::size_t kept = 0;
  for (std::uint32_t k = 0; k < 3; ++k) {
    Spec spec = SpecOfShard(whole, ShardAssignment{k, 3});
    EXPECT_EQ(spec.sources.size(), 1u);
    kept += spec.jobs.size();
    for (const auto& job : spec.jobs) ++seen[std::stoi(job.role.substr(5))];
    for (std::size_t i = 1; i < spec.jobs.size(); ++i) {
      EXPECT_LT(std::stoi(spec.jobs[i - 1].role.substr(5)), std::stoi(spec.jobs[i].role.substr(5)))
          << "file order kept";
    }
  }
  EXPECT_EQ(kept, 1000u);
  for (int count : seen) EXPECT_EQ(count, 1);
  EXPECT_EQ(SpecOfShard(whole, ShardAssignment{}).jobs.size(), 1000u);
}

}  // namespace
}  // namespace schedwatch
