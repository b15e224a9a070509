// --shard, --total-shards and --shard=auto: what is refused (exit 2 in main) and why.
#include "exporter/commands/shard_flags.h"

#include <gtest/gtest.h>

#include "exporter/refresh/read_sources.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

Result<ShardAssignment> Resolve(std::string shard, std::optional<long long> total,
                                std::string pod = "") {
  return ResolveShard(ShardFlags{std::move(shard), total, std::move(pod)});
}

TEST(ShardFlagsTest, UnshardedByDefault) {
  auto shard = Resolve("", std::nullopt);
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ(shard->ordinal, 0u);
  EXPECT_EQ(shard->total, 1u);
  EXPECT_FALSE(shard->Sharded());
  EXPECT_TRUE(Resolve("", 1).ok());
  EXPECT_TRUE(Resolve("0", 1).ok());
}

TEST(ShardFlagsTest, ShardOfTotal) {
  auto shard = Resolve("2", 3);
  ASSERT_TRUE(shard.ok()) << shard.error();
  EXPECT_EQ(shard->ordinal, 2u);
  EXPECT_EQ(shard->total, 3u);
  EXPECT_EQ(shard->spare_of, 0u);
}

TEST(ShardFlagsTest, BadValuesAreRefusedWithAReason) {
  EXPECT_EQ(Resolve("3", 3).error(), "--shard 3 is not below --total-shards 3: shards are 0 to 2");
  EXPECT_EQ(Resolve("1", std::nullopt).error(),
            "--shard 1 needs --total-shards N: how many shards are there?");
  EXPECT_EQ(Resolve("", 0).error(),
            "--total-shards: 0 is not a number of shards from 1 to 1048576");
  EXPECT_EQ(Resolve("0", -2).error(),
            "--total-shards: -2 is not a number of shards from 1 to 1048576");
  EXPECT_EQ(Resolve("", 4).error(),
            "--total-shards 4 needs --shard K (0 to 3) or --shard=auto: which shard is this?");
  EXPECT_EQ(Resolve("-1", 3).error(), "--shard: \"-1\" is neither a shard number nor auto");
  EXPECT_EQ(Resolve("one", 3).error(), "--shard: \"one\" is neither a shard number nor auto");
  EXPECT_EQ(Resolve("99999999999999999999", 3).error(),
            "--shard: \"99999999999999999999\" is neither a shard number nor auto");
}

TEST(ShardFlagsTest, AutoTakesTheOrdinalOfTheStatefulSetPod) {
  auto shard = Resolve("auto", 4, "schedwatch-shard-3");
  ASSERT_TRUE(shard.ok()) << shard.error();
  EXPECT_EQ(shard->ordinal, 3u);
  EXPECT_EQ(shard->total, 4u);
  EXPECT_EQ(Resolve("auto", 4).error(),
            "--shard=auto: no pod name: give --pod-name or set $POD_NAME (a StatefulSet's pod "
            "name, \"name-<ordinal>\", from the downward API)");
  for (std::string bad : {"schedwatch", "schedwatch-", "schedwatch-a1", "-3", "schedwatch-3x",
                          "schedwatch-99999999999"}) {
    EXPECT_EQ(Resolve("auto", 4, bad).error(),
              "--shard=auto: the pod name \"" + bad + "\" does not end in -<ordinal>")
        << bad;
  }
  EXPECT_FALSE(Resolve("auto", std::nullopt, "schedwatch-0").ok());
}

// A StatefulSet shrinking from 5 to 3 pods: told --total-shards 3 first, pods 3 and 4 keep
// watching what they watched, so no role is left while the others restart.
TEST(ShardFlagsTest, AutoBeyondTheTotalIsASpareThatKeepsItsRoles) {
  auto spare = Resolve("auto", 3, "schedwatch-4");
  ASSERT_TRUE(spare.ok()) << spare.error();
  EXPECT_EQ(spare->ordinal, 4u);
  EXPECT_EQ(spare->spare_of, 5u);
  EXPECT_TRUE(spare->Sharded());
  auto pod3 = Resolve("auto", 3, "schedwatch-3");
  ASSERT_TRUE(pod3.ok());
  for (int i = 0; i < 10000; ++i) {
    std::string role = "role-" + std::to_string(i);
    std::uint32_t before = ShardAssignment::Of(role, 5);
    if (before == 4) {
      EXPECT_TRUE(spare->Owns(role)) << role;
    } else if (before == 3) {
      EXPECT_TRUE(pod3->Owns(role)) << role;
    }
  }
}

TEST(ShardFlagsTest, ReadsKeepTheShardsObjectsRunsAndProblems) {
  SourceSnapshot snapshot;
  for (int i = 0; i < 100; ++i) {
    std::string role = "role-" + std::to_string(i);
    LiveObject object;
    object.set_role(role);
    snapshot.objects.push_back(object);
    snapshot.history[role] = {};
    snapshot.progress[role] = i;
  }
  snapshot.problems.push_back(MakeProblem(Reason::kMalformedObject, "host data"));
  snapshot.problems.push_back(MakeProblem(Reason::kServerError, "our request", true));
  for (std::uint32_t k = 0; k < 3; ++k) {
    SourceSnapshot kept = snapshot;
    KeepShardOf(kept, ShardAssignment{k, 3}, true);
    for (const auto& object : kept.objects) EXPECT_EQ(ShardAssignment::Of(object.role(), 3), k);
    for (const auto& [role, history] : kept.history) EXPECT_EQ(ShardAssignment::Of(role, 3), k);
    for (const auto& [role, at] : kept.progress) EXPECT_EQ(ShardAssignment::Of(role, 3), k);
    EXPECT_GT(kept.objects.size(), 20u);
    EXPECT_EQ(kept.history.size(), kept.objects.size());
    EXPECT_EQ(kept.problems.size(), k == 0 ? 2u : 1u) << "host data counted by shard 0 only";
    EXPECT_EQ(kept.problems.back().reason, "server_error");
    SourceSnapshot own_jobs = snapshot;  // GitHub, GitLab: problems of the shard's own jobs
    KeepShardOf(own_jobs, ShardAssignment{k, 3}, false);
    EXPECT_EQ(own_jobs.problems.size(), 2u);
  }
}

}  // namespace
}  // namespace schedwatch
