// labels and severity: decoded over the defaults, and shared between jobs with equal values so
// that jobs without them cost nothing.
#include <gtest/gtest.h>

#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

Result<Spec> Parse(const std::string& text) {
  return ParseSpec(text, "alerting.yml", BuiltInCatalog());
}

TEST(JobAlertingTest, LabelsAndSeverityOverTheDefaults) {
  auto spec = Parse(R"(version: 1
defaults:
  labels: {team: payments, tier: "1"}
  severity: {missing: critical, stale: warning}
sources: {demo: {type: file, path: live.yaml}}
jobs:
  - {role: a, source: demo, schedule: "0 3 * * *", spec_version: "1"}
  - {role: b, source: demo, schedule: "0 3 * * *", spec_version: "1",
     labels: {team: db, service: ledger}, severity: {stale: critical}}
  - {role: c, source: demo, schedule: "0 3 * * *", spec_version: "1", severity: info}
  - {role: d, source: demo, schedule: "0 3 * * *", spec_version: "1"}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const JobAlerting& a = spec->jobs[0].Alerting();
  EXPECT_EQ(a.labels, (LabelPairs{{"team", "payments"}, {"tier", "1"}}));
  EXPECT_EQ(a.SeverityOf("missing", "x"), "critical");
  EXPECT_EQ(a.SeverityOf("stale", "x"), "warning");
  EXPECT_EQ(a.SeverityOf("hung", "built-in"), "built-in");
  const JobAlerting& b = spec->jobs[1].Alerting();
  EXPECT_EQ(b.labels, (LabelPairs{{"service", "ledger"}, {"team", "db"}, {"tier", "1"}}));
  EXPECT_EQ(b.SeverityOf("stale", "x"), "critical");
  EXPECT_EQ(b.SeverityOf("missing", "x"), "critical");
  const JobAlerting& c = spec->jobs[2].Alerting();
  for (auto kind : kAlertKinds) EXPECT_EQ(c.SeverityOf(kind, "x"), "info") << kind;
  // Equal settings are one object, shared.
  EXPECT_EQ(spec->jobs[0].alerting.get(), spec->jobs[3].alerting.get());
  EXPECT_NE(spec->jobs[0].alerting.get(), spec->jobs[1].alerting.get());
}

TEST(JobAlertingTest, ThresholdsAndMinRuntimeOverTheDefaults) {
  auto spec = Parse(R"(version: 1
defaults: {failure_threshold: 3, min_runtime: 2m}
sources: {demo: {type: file, path: live.yaml}}
jobs:
  - {role: a, source: demo, schedule: "0 3 * * *", spec_version: "1"}
  - {role: b, source: demo, schedule: "0 3 * * *", spec_version: "1", recovery_threshold: 2,
     min_runtime: 90s}
  - {role: c, source: demo, schedule: "0 3 * * *", spec_version: "1"}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  const JobAlerting& a = spec->jobs[0].Alerting();
  EXPECT_EQ(a.failure_threshold, 3);
  EXPECT_EQ(a.recovery_threshold, 1);
  EXPECT_EQ(a.min_runtime, 120);
  EXPECT_TRUE(a.Thresholds());
  const JobAlerting& b = spec->jobs[1].Alerting();
  EXPECT_EQ(b.failure_threshold, 3);
  EXPECT_EQ(b.recovery_threshold, 2);
  EXPECT_EQ(b.min_runtime, 90);
  EXPECT_EQ(spec->jobs[0].alerting, spec->jobs[2].alerting);  // equal settings: one object
  EXPECT_NE(spec->jobs[0].alerting, spec->jobs[1].alerting);
  EXPECT_FALSE(NoAlerting().Thresholds());
  EXPECT_EQ(NoAlerting().min_runtime, 0);
}

TEST(JobAlertingTest, DurationHistogramOverTheDefaults) {
  auto spec = Parse(R"(version: 1
defaults: {duration_histogram: true}
sources: {demo: {type: file, path: live.yaml}}
jobs:
  - {role: a, source: demo, schedule: "0 3 * * *", spec_version: "1"}
  - {role: b, source: demo, schedule: "0 3 * * *", spec_version: "1", duration_histogram: false}
  - {role: c, source: demo, schedule: "0 3 * * *", spec_version: "1"}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_TRUE(spec->jobs[0].Alerting().duration_histogram);
  EXPECT_FALSE(spec->jobs[1].Alerting().duration_histogram);
  EXPECT_EQ(spec->jobs[1].alerting, nullptr);  // false and nothing else set: no object
  EXPECT_EQ(spec->jobs[0].alerting, spec->jobs[2].alerting);
  EXPECT_FALSE(NoAlerting().duration_histogram);
}

TEST(JobAlertingTest, JobsWithoutThemHoldNoObject) {
  auto spec = Parse(R"(version: 1
sources: {demo: {type: file, path: live.yaml}}
jobs:
  - {role: a, source: demo, schedule: "0 3 * * *", spec_version: "1"}
  - {role: b, source: demo, schedule: "0 3 * * *", spec_version: "1", labels: {}}
)");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->jobs[0].alerting, nullptr);
  EXPECT_EQ(spec->jobs[1].alerting, nullptr);
  EXPECT_TRUE(spec->jobs[0].Alerting().labels.empty());
  EXPECT_EQ(spec->jobs[0].Alerting().SeverityOf("missing", "critical"), "critical");
}

TEST(JobAlertingTest, ManyDistinctSettingsStillDecode) {
  std::string text = "version: 1\nsources: {demo: {type: file, path: live.yaml}}\njobs:\n";
  for (int i = 0; i < 600; ++i) {
    text += "  - {role: r" + std::to_string(i) +
            ", source: demo, schedule: \"0 3 * * *\", spec_version: \"1\", labels: {owner: o" +
            std::to_string(i % 300) + "}}\n";
  }
  auto spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->jobs[599].Alerting().Label("owner"), "o299");
  EXPECT_EQ(spec->jobs[10].alerting.get(), spec->jobs[310].alerting.get());
}

}  // namespace
}  // namespace schedwatch
