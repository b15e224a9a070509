// An exposition written over the last one reuses the chunks whose roles' series did not change:
// the text is byte for byte the one written afresh, in both forms, and a change to one role
// writes again only the chunks holding that role's series.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "exporter/exposition/exposition.h"
#include "sources/catalog.h"
#include "tests/exporter/exposition/gunzip.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kNow = 1796040000;
// Chunks of a few roles' lines, so that a test of 300 roles has a hundred, some cut inside a
// role's lines (its 12 conditions, its histogram); nearly all cut by content, as at full size.
constexpr ChunkBounds kSmall{1024, 16384};

std::string RoleName(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "job-%04d", i);
  return name;
}

// `roles` jobs; every third keeps a duration histogram. `version` overrides one role's
// spec_version.
std::shared_ptr<const Spec> MakeSpec(int roles, int versioned = -1,
                                     const std::string& version = "2") {
  std::string text = "version: 1\nsources: {s: {type: file, path: live.yaml}}\njobs:\n";
  for (int i = 0; i < roles; ++i) {
    text += "  - {role: " + RoleName(i) +
            ", source: s, schedule: \"*/5 * * * *\", spec_version: \"" +
            (i == versioned ? version : "1") + "\"" +
            (i % 3 == 0 ? ", duration_histogram: true" : "") + "}\n";
  }
  auto spec = ParseSpec(text, "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return std::make_shared<const Spec>(std::move(*spec));
}

RoleResult MakeRole(const JobSpec& job, int i) {
  RoleResult role;
  role.job = &job;
  role.status.conditions.set(static_cast<std::size_t>(i % kConditionCount));
  role.status.registered_objects = role.status.active_objects = 1;
  role.status.last_scheduled = kNow - 60 * (i % 5);
  role.status.next_scheduled = kNow + 300 - 60 * (i % 5);
  if (i % 2 == 0) role.status.history.last_success = kNow - 100 - i;
  if (i % 4 == 1) {
    role.runs = std::make_shared<const RoleRuns>();
    role.run_counts = {static_cast<std::uint32_t>(i % 7), static_cast<std::uint32_t>(i % 3)};
  }
  return role;
}

std::shared_ptr<const RunExemplars> MakeExemplars(int i) {
  RunExemplars exemplars;
  exemplars.succeeded =
      RunExemplar{std::make_shared<const RunIdentity>(RunIdentity{"run-" + std::to_string(i), ""}),
                  kNow - i, 30 + i % 100};
  return std::make_shared<const RunExemplars>(std::move(exemplars));
}

// Every role of `spec`, but those in `left_out`; those `kept` has of the same job are its objects,
// as the observer keeps unchanged roles.
RefreshResult MakeResult(std::shared_ptr<const Spec> spec, const std::set<int>& left_out = {},
                         const RefreshResult* kept = nullptr) {
  std::map<const JobSpec*, RoleList::Item> keep;
  if (kept != nullptr) {
    for (auto it = kept->roles.begin(); it != kept->roles.end(); ++it) keep[it->job] = it.item();
  }
  RefreshResult result;
  result.spec = spec;
  result.time = kNow;
  result.complete = true;
  for (std::size_t i = 0; i < spec->jobs.size(); ++i) {
    if (left_out.count(static_cast<int>(i)) != 0) continue;
    const JobSpec& job = spec->jobs[i];
    if (auto it = keep.find(&job); it != keep.end()) {
      result.roles.push_back(it->second);
    } else {
      result.roles.push_back(MakeRole(job, static_cast<int>(i)));
    }
    if (job.Alerting().duration_histogram) {
      auto histogram = std::make_shared<DurationHistogram>();
      histogram->Observe(static_cast<std::int64_t>(i));
      result.durations.push_back({&job, histogram});
    }
    if (i % 5 == 0) result.exemplars.push_back({&job, MakeExemplars(static_cast<int>(i))});
  }
  return result;
}

struct Written {
  ChunkedText text;
  std::size_t reused = 0;
};

// The exposition of `result` in one form, over `last` (its text and result) when given, with a
// line of no role after the roles' as the self metrics are.
Written Write(const RefreshResult& result, bool open_metrics, const Written* last = nullptr,
              const RefreshResult* last_result = nullptr, ChunkBounds bounds = kSmall) {
  ChunkedTextWriter writer(last != nullptr ? &last->text : nullptr, bounds);
  RenderRoleMetrics(result, {open_metrics, kNow - 3600}, writer, last_result);
  writer.EndOfItems();
  writer.buffer() += "schedwatch_exporter_last_cycle_timestamp_seconds 1\n";
  writer.EndOfLine();
  Written written;
  written.reused = writer.reused_chunks();
  written.text = writer.Finish();
  return written;
}

std::multiset<std::string> Lines(const std::string& text) {
  std::multiset<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

// The lines of `a` not in `b`, and of `b` not in `a`.
std::vector<std::string> Changed(const std::string& a, const std::string& b) {
  auto from = Lines(a), to = Lines(b);
  std::vector<std::string> changed;
  std::set_symmetric_difference(from.begin(), from.end(), to.begin(), to.end(),
                                std::back_inserter(changed));
  return changed;
}

// Writes `after` over `before`'s exposition in both forms and checks it against the text
// written afresh: every changed line is `role`'s, and every chunk holding none of them is reused.
// `near`: roles beside `role` when it left, whose chunk it was.
void ExpectOnlyRoleWrittenAgain(const RefreshResult& before, const RefreshResult& after,
                                const std::string& role, std::vector<std::string> near = {}) {
  near.push_back(role);
  for (bool open_metrics : {false, true}) {
    SCOPED_TRACE(open_metrics ? "OpenMetrics" : "text");
    Written last = Write(before, open_metrics);
    Written next = Write(after, open_metrics, &last, &before);
    const std::string fresh = Write(after, open_metrics).text;
    ASSERT_EQ(next.text.str(), fresh);
    ChunkedTextReader reader(next.text, "", true);
    std::string body(reader.size(), '\0');
    ASSERT_EQ(reader.Read(body.data(), body.size()), static_cast<std::ptrdiff_t>(body.size()));
    EXPECT_EQ(testing::Gunzip(body), fresh);
    std::vector<std::string> changed = Changed(last.text.str(), fresh);
    EXPECT_FALSE(changed.empty());
    for (const auto& line : changed) {
      EXPECT_NE(line.find("role=\"" + role + "\""), std::string::npos) << line;
    }
    // Written again: the chunks holding the role's lines, and those holding a line of no role
    // or of two families (a header, the tail: not reusable).
    std::set<const TextChunk*> kept;
    for (const auto& chunk : last.text.chunks()) kept.insert(chunk.get());
    std::size_t reusable = 0;
    for (std::size_t c = 0; c < next.text.chunks().size(); ++c) {
      const TextChunk& chunk = *next.text.chunks()[c];
      if (!next.text.spans()[c].reusable) continue;
      ++reusable;
      std::string lines = testing::InflateChunk(chunk);
      bool roles = std::any_of(near.begin(), near.end(), [&](const std::string& name) {
        return lines.find("role=\"" + name + "\"") != std::string::npos;
      });
      EXPECT_TRUE(roles || kept.count(&chunk) != 0) << "written again: " << lines;
    }
    EXPECT_GT(next.reused, reusable / 2) << next.reused << " of " << next.text.chunks().size();
  }
}

TEST(ExpositionReuseTest, ARoleGoingMissingWritesOnlyItsSeriesAgain) {
  auto spec = MakeSpec(300);
  RefreshResult before = MakeResult(spec);
  RefreshResult after = before;  // shares every role
  RoleResult& role = after.roles.Mutable(123);
  role.status.conditions.reset();
  role.status.conditions.set(static_cast<std::size_t>(Condition::kMissing));
  role.status.registered_objects = 0;
  role.status.active_objects = 0;
  ExpectOnlyRoleWrittenAgain(before, after, "job-0123");
}

TEST(ExpositionReuseTest, AFinishedRunWritesOnlyItsRoleAgain) {
  auto spec = MakeSpec(300);
  RefreshResult before = MakeResult(spec);
  RefreshResult after = before;
  RoleResult& role = after.roles.Mutable(150);  // a histogram, exemplars
  ASSERT_EQ(role.job->role, "job-0150");
  role.runs = std::make_shared<const RoleRuns>();
  role.run_counts.succeeded += 1;
  role.status.history.last_success = kNow;
  auto histogram = std::make_shared<DurationHistogram>(*after.durations[50].histogram);
  histogram->Observe(7);
  after.durations[50].histogram = histogram;
  after.exemplars[30].exemplars = MakeExemplars(9999);
  ASSERT_EQ(after.exemplars[30].job, role.job);
  ExpectOnlyRoleWrittenAgain(before, after, "job-0150");
}

TEST(ExpositionReuseTest, AReloadThatChangesOneSpecVersionWritesOnlyThatRoleAgain) {
  // Every job is another object after a reload: they pair by role, compared by what they show.
  RefreshResult before = MakeResult(MakeSpec(300));
  RefreshResult after = MakeResult(MakeSpec(300, 77, "8"));
  ExpectOnlyRoleWrittenAgain(before, after, "job-0077");
}

TEST(ExpositionReuseTest, ValuesEqualButWrittenApartAreWrittenAgain) {
  auto spec = MakeSpec(300);
  RefreshResult before = MakeResult(spec);
  RunRecordFacts records;
  records.last_duration = 0.0;
  auto zero = std::make_shared<const RunRecordFacts>(records);
  for (std::size_t i = 0; i < before.roles.size(); ++i) before.roles.Mutable(i).records = zero;
  RefreshResult after = before;
  records.last_duration = -0.0;  // == 0.0, written "-0"
  after.roles.Mutable(100).records = std::make_shared<const RunRecordFacts>(records);
  ExpectOnlyRoleWrittenAgain(before, after, "job-0100");
}

TEST(ExpositionReuseTest, ARoleLeavingOrComingWritesOnlyItsSeries) {
  auto spec = MakeSpec(300);
  RefreshResult all = MakeResult(spec);
  RefreshResult without = MakeResult(spec, {201});
  // Where it left: between its neighbours in each family (every role, every third, fourth...).
  std::vector<std::string> near;
  for (int i = 197; i <= 205; ++i) near.push_back(RoleName(i));
  ExpectOnlyRoleWrittenAgain(all, without, "job-0201", near);
  ExpectOnlyRoleWrittenAgain(without, all, "job-0201");
}

// Refresh after refresh of random changes, each written over the last: always the text written
// afresh, in chunks of a line or two and of a few roles.
TEST(ExpositionReuseTest, RandomChangesAlwaysGiveTheTextWrittenAfresh) {
  std::mt19937 random(7);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  for (ChunkBounds bounds : {ChunkBounds{64, 256}, kSmall}) {
    for (bool open_metrics : {false, true}) {
      auto spec = MakeSpec(200);
      std::set<int> left_out = {5, 6, 150};
      RefreshResult last = MakeResult(spec, left_out);
      Written written = Write(last, open_metrics, nullptr, nullptr, bounds);
      std::size_t reused = 0;
      for (int round = 0; round < 40; ++round) {
        if (round % 10 == 9) spec = MakeSpec(200, static_cast<int>(pick(200)), "9");  // reload
        if (pick(3) == 0) {
          int role = static_cast<int>(pick(200));
          if (!left_out.erase(role)) left_out.insert(role);
        }
        RefreshResult next = MakeResult(spec, left_out, &last);
        for (int change = static_cast<int>(pick(4)); change > 0; --change) {
          RoleResult& role = next.roles.Mutable(pick(next.roles.size()));
          switch (pick(5)) {
            case 0:
              role.status.conditions.flip(pick(kConditionCount));
              break;
            case 1:
              role.status.next_scheduled = kNow + static_cast<std::int64_t>(pick(1000));
              break;
            case 2:
              role.run_counts.failed += 1;
              break;
            case 3: {  // 0 and -0 are equal, but written apart
              RunRecordFacts records;
              records.last_duration = pick(2) == 0 ? 0.0 : -0.0;
              role.records = std::make_shared<const RunRecordFacts>(records);
              break;
            }
            default:
              role.status.registered_objects = std::nullopt;
              break;
          }
        }
        if (!next.durations.empty() && pick(2) == 0) {
          auto& entry = next.durations[pick(next.durations.size())];
          auto histogram = std::make_shared<DurationHistogram>(*entry.histogram);
          histogram->Observe(static_cast<std::int64_t>(pick(100000)));
          entry.histogram = histogram;
        }
        if (!next.exemplars.empty() && pick(2) == 0) {
          next.exemplars[pick(next.exemplars.size())].exemplars =
              MakeExemplars(static_cast<int>(pick(1000)));
        }
        Written again = Write(next, open_metrics, &written, &last, bounds);
        ASSERT_EQ(again.text.str(), Write(next, open_metrics, nullptr, nullptr, bounds).text.str())
            << "round " << round;
        reused += again.reused;
        written = std::move(again);
        last = std::move(next);
      }
      EXPECT_GT(reused, 0u);
    }
  }
}

}  // namespace
}  // namespace schedwatch
