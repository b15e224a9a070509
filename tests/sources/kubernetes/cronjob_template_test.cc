// The CronJob templates reconcile POSTs: YAML into JSON, and every reason to refuse one.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sources/catalog.h"
#include "sources/kubernetes/kubernetes_repairer.h"
#include "tests/test_util.h"

namespace schedwatch::kubernetes {
namespace {

using Json = nlohmann::json;

const std::string kTemplate =
    testing::ReadFile(std::filesystem::path(SCHEDWATCH_TEST_DIR) /
                      "sources/kubernetes/fixtures/cronjob-template.yaml");

JobSpec Job(const std::string& schedule = "30 2 * * *",
            const std::string& timezone = "Europe/Berlin") {
  auto spec = ParseSpec(fmt::format(R"(version: 1
sources:
  prod: {{type: kubernetes, namespaces: [batch]}}
jobs:
  - {{role: nightly-export, source: prod, schedule: "{}", timezone: {}, spec_version: "12"}}
)",
                                    schedule, timezone),
                        "spec.yaml", BuiltInCatalog());
  EXPECT_TRUE(spec.ok()) << spec.error();
  return spec->jobs.at(0);
}

// The fixture with `from` replaced by `to` (which must be there).
std::string Edited(const std::string& from, const std::string& to) {
  std::string text = kTemplate;
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

std::string Refusal(const std::string& text, const std::vector<std::string>& namespaces = {},
                    const JobSpec& job = Job()) {
  auto read = ReadCronJobTemplate(text, job, namespaces);
  EXPECT_FALSE(read.ok());
  return read.ok() ? "" : read.error();
}

TEST(CronJobTemplateTest, YamlBecomesTheJsonKubectlWouldSend) {
  auto read = ReadCronJobTemplate(kTemplate, Job(), {"batch"});
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->namespace_name, "batch");
  EXPECT_EQ(read->name, "nightly-export");
  Json body = Json::parse(read->json);
  const Json& spec = body["spec"];
  EXPECT_EQ(spec["schedule"], "30 2 * * *");
  EXPECT_EQ(spec["suspend"], false);
  EXPECT_EQ(spec["startingDeadlineSeconds"], 600);
  EXPECT_TRUE(spec["successfulJobsHistoryLimit"].is_number_integer());
  EXPECT_EQ(body["metadata"]["annotations"]["schedwatch.io/spec-version"], "12");
  const Json& container = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
  // Quoted scalars stay strings, whatever they look like.
  EXPECT_EQ(container["args"], Json::array({"--since", "24h", "--retries", "3"}));
  EXPECT_EQ(container["env"][0]["value"], "0.5");
  EXPECT_EQ(container["env"][1]["value"], "false");
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "100m");
  EXPECT_TRUE(spec["jobTemplate"]["spec"]["template"]["spec"]["tolerations"].is_null());
  EXPECT_EQ(body.count("status"), 0u);
}

TEST(CronJobTemplateTest, TheExampleCronJobIsATemplateForItsRole) {
  // examples/kubernetes/watched/db-backup-cronjob.yaml, for the db-backup job of the example
  // ConfigMap's spec: the marked manifest kept in version control is the template.
  auto spec = ParseSpec(R"(version: 1
sources:
  cluster: {type: kubernetes, in_cluster: true}
jobs:
  - {role: db-backup, source: cluster, schedule: "30 2 * * *", timezone: Europe/Berlin,
     spec_version: "4"}
)",
                        "spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto read =
      ReadCronJobTemplate(testing::ReadFile(std::filesystem::path(SCHEDWATCH_SOURCE_DIR) /
                                            "examples/kubernetes/watched/db-backup-cronjob.yaml"),
                          spec->jobs.at(0), {});
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->namespace_name, "ops");
  EXPECT_EQ(read->name, "db-backup");
}

TEST(CronJobTemplateTest, PlainScalarsFollowTheYaml12CoreSchema) {
  auto read = ReadCronJobTemplate(
      Edited("  startingDeadlineSeconds: 600\n",
             "  startingDeadlineSeconds: 0x258\n  x-float: -1.5e3\n  x-octal: 0o17\n"
             "  x-true: True\n  x-word: yes\n  x-version: 1.4.2\n  x-null: null\n"),
      Job(), {});
  ASSERT_TRUE(read.ok()) << read.error();
  Json spec = Json::parse(read->json)["spec"];
  EXPECT_EQ(spec["startingDeadlineSeconds"], 600);
  EXPECT_DOUBLE_EQ(spec["x-float"].get<double>(), -1500.0);
  EXPECT_EQ(spec["x-octal"], 15);
  EXPECT_EQ(spec["x-true"], true);
  EXPECT_EQ(spec["x-word"], "yes");  // YAML 1.1's booleans are strings in 1.2
  EXPECT_EQ(spec["x-version"], "1.4.2");
  EXPECT_TRUE(spec["x-null"].is_null());
}

TEST(CronJobTemplateTest, TheSourcesOnlyNamespaceFillsAMissingOne) {
  auto read = ReadCronJobTemplate(Edited("  namespace: batch\n", ""), Job(), {"ops"});
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(read->namespace_name, "ops");
  EXPECT_EQ(Json::parse(read->json)["metadata"]["namespace"], "ops");
}

TEST(CronJobTemplateTest, AnEquivalentScheduleIsNoDrift) {
  EXPECT_TRUE(ReadCronJobTemplate(kTemplate, Job("30 2 */1 * *"), {}).ok());
}

TEST(CronJobTemplateTest, RefusesWhatWouldNotCreateThisRolesJob) {
  EXPECT_EQ(Refusal(Edited("kind: CronJob", "kind: Job")),
            "apiVersion and kind must be batch/v1 and CronJob, not \"batch/v1\" \"Job\"");
  EXPECT_EQ(Refusal(Edited("  name: nightly-export\n", "  generateName: nightly-\n")),
            "metadata.generateName: must not be set (a fixed name is what stops a second "
            "creation; uid and resourceVersion are the server's)");
  EXPECT_EQ(Refusal(Edited("  name: nightly-export\n",
                           "  name: nightly-export\n  resourceVersion: \"4711\"\n"))
                .rfind("metadata.resourceVersion: must not be set", 0),
            0u);
  EXPECT_EQ(Refusal(Edited("  name: nightly-export\n", "  name: Nightly_Export\n")),
            "metadata.name: \"Nightly_Export\" is not a CronJob name (lower-case letters, digits, "
            "'-' and '.', at most 52 characters)");
  EXPECT_NE(Refusal(Edited("  name: nightly-export\n", "  name: " + std::string(53, 'a') + "\n"))
                .find("at most 52 characters"),
            std::string::npos);
  EXPECT_EQ(Refusal(Edited("  namespace: batch\n", "")),
            "metadata.namespace: must be set, as the source does not watch exactly one namespace");
  EXPECT_EQ(Refusal(kTemplate, {"ops", "web"}),
            "metadata.namespace: \"batch\" is not one of the source's namespaces, so the CronJob "
            "would never be seen");
  EXPECT_EQ(
      Refusal(Edited("    schedwatch.io/role: nightly-export\n  annotations", "  annotations")),
      "metadata.labels: must carry schedwatch.io/role: nightly-export");
  EXPECT_EQ(Refusal(Edited("    schedwatch.io/role: nightly-export\n  annotations",
                           "    schedwatch.io/role: weekly-export\n  annotations")),
            "metadata.labels: schedwatch.io/role is \"weekly-export\", not \"nightly-export\"");
  EXPECT_EQ(Refusal(Edited("suspend: false", "suspend: true")),
            "spec.suspend: is true; a repair must create a running job");
}

TEST(CronJobTemplateTest, RefusesATemplateThatDiffersFromTheSpec) {
  EXPECT_EQ(Refusal(Edited("\"30 2 * * *\"", "\"30 3 * * *\"")),
            "schedule \"30 3 * * *\", time zone Europe/Berlin and spec version \"12\" differ from "
            "the spec's \"30 2 * * *\", Europe/Berlin and \"12\" (spec.schedule, spec.timeZone, "
            "the schedwatch.io/spec-version annotation)");
  EXPECT_NE(Refusal(Edited("spec-version: \"12\"", "spec-version: \"11\"")).find("\"11\""),
            std::string::npos);
  // Without spec.timeZone the CronJob would run in the controller's zone (UTC).
  EXPECT_NE(Refusal(Edited("  timeZone: Europe/Berlin\n", "")).find("time zone UTC"),
            std::string::npos);
}

TEST(CronJobTemplateTest, MalformedTextSaysWhere) {
  EXPECT_EQ(Refusal(Edited("  concurrencyPolicy: Forbid\n",
                           "  concurrencyPolicy: Forbid\n  concurrencyPolicy: Allow\n")),
            "16:3: \"concurrencyPolicy\" appears twice");
  EXPECT_EQ(Refusal(Edited("  suspend: false\n", "  suspend: false\n  x: .inf\n")),
            "17:6: .inf has no JSON form");
  EXPECT_EQ(Refusal(Edited("  suspend: false\n", "  suspend: false\n  x: 99999999999999999999\n")),
            "17:6: 99999999999999999999 does not fit in 64 bits");
  EXPECT_NE(Refusal("apiVersion: batch/v1\nkind: [CronJob\n").find("3:1:"), std::string::npos);
  EXPECT_EQ(Refusal("- just\n- a list\n"), "the template is not a mapping");
  // A value the live-object parser rejects is refused with its words.
  EXPECT_NE(Refusal(Edited("schedule: \"30 2 * * *\"", "schedule: 42")).find("spec.schedule"),
            std::string::npos);
}

TEST(CronJobTemplateTest, SelfReferenceDeepNestingAndAliasBombsAreRefusedNotFatal) {
  // A self-referencing alias used to make the YAML tree a cycle: SIGSEGV in the conversion.
  EXPECT_EQ(Refusal(Edited("metadata:\n", "metadata: &m\n  loop: *m\n")),
            "5:9: alias \"m\" refers to a node that contains it (a cycle)");
  EXPECT_EQ(Refusal("apiVersion: batch/v1\nkind: CronJob\nmetadata: &m {name: x, loop: *m}\n"),
            "3:30: alias \"m\" refers to a node that contains it (a cycle)");
  // 100,000 levels: refused by the YAML reader's own bound.
  EXPECT_NE(Refusal("a: " + std::string(100000, '[') + std::string(100000, ']') + "\n")
                .find("nesting deeper than 256 levels"),
            std::string::npos);
  // 100 levels pass the YAML reader, not the conversion.
  EXPECT_EQ(Refusal(Edited("  suspend: false\n", "  suspend: false\n  x: " + std::string(100, '[') +
                                                     std::string(100, ']') + "\n")),
            "17:69: nested deeper than 64 levels");
  // Nine levels of nine-fold aliases: 387 million values if expanded.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    bomb += fmt::format("a{}: &a{} [", i, i);
    for (int j = 0; j < 9; ++j) bomb += fmt::format("{}*a{}", j ? ", " : "", i - 1);
    bomb += "]\n";
  }
  EXPECT_EQ(Refusal(bomb), "1:13: expands to more than 100000 values (aliases of aliases?)");
}

}  // namespace
}  // namespace schedwatch::kubernetes
