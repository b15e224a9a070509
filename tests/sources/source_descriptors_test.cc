// Each source type's descriptor: its settings decoded into its struct, every problem with its
// position, its job keys and how its scheduler reads a schedule. Linked with the pure catalog
// only, as schedwatch_rulegen is: decoding does no I/O.
#include <gtest/gtest.h>

#include "schedwatch/spec.h"
#include "sources/catalog.h"
#include "sources/crontab/crontab_descriptor.h"
#include "sources/file/file_descriptor.h"
#include "sources/github_actions/github_actions_descriptor.h"
#include "sources/gitlab/gitlab_descriptor.h"
#include "sources/kubernetes/kubernetes_descriptor.h"
#include "sources/systemd/systemd_descriptor.h"
#include "tests/sources/source_block.h"

namespace schedwatch {
namespace {

using testing::DecodeSourceBlock;

// A copy: the decoded source is a temporary.
template <typename T>
T Settings(const Result<SourceSpec>& source) {
  EXPECT_TRUE(source.ok()) << source.error();
  if (!source.ok() || source->SettingsAs<T>() == nullptr) return T{};
  return *source->SettingsAs<T>();
}

// The error of a source block; positions are in "/spec/spec.yaml", the block on line 3.
std::string Error(const std::string& type, const std::string& entries) {
  auto source = DecodeSourceBlock("s", type, entries);
  return source.ok() ? "accepted" : source.error();
}

TEST(SourceCatalogTest, HoldsEveryBuiltInTypeAndHowItsSchedulerReadsSchedules) {
  const SourceCatalog& catalog = BuiltInCatalog();
  EXPECT_EQ(catalog.Types(),
            (std::vector<std::string>{"celery_beat", "crontab", "file", "github_actions", "gitlab",
                                      "kubernetes", "sidekiq_cron", "systemd"}));
  EXPECT_EQ(catalog.Find("nomad"), nullptr);
  const SourceDescriptor& crontab = *catalog.Find("crontab");
  EXPECT_EQ(crontab.dialect(), CronDialect::kDebianCron);
  EXPECT_EQ(crontab.dst_policy(), DstPolicy::kVixieCron);
  EXPECT_TRUE(crontab.allows_reboot());
  const SourceDescriptor& kubernetes = *catalog.Find("kubernetes");
  EXPECT_EQ(kubernetes.dialect(), CronDialect::kKubernetes);
  EXPECT_EQ(kubernetes.dst_policy(), DstPolicy::kWallClock);
  EXPECT_FALSE(kubernetes.allows_reboot());
  EXPECT_EQ(catalog.Find("github_actions")->dialect(), CronDialect::kGitHubActions);
  EXPECT_FALSE(catalog.Find("github_actions")->allows_reboot());
  EXPECT_EQ(catalog.Find("gitlab")->dialect(), CronDialect::kGitLab);
  EXPECT_EQ(catalog.Find("gitlab")->dst_policy(), DstPolicy::kWallClock);
  EXPECT_FALSE(catalog.Find("gitlab")->allows_reboot());
  EXPECT_EQ(catalog.Find("file")->dialect(), CronDialect::kDebianCron);
  EXPECT_FALSE(catalog.Find("file")->allows_reboot());
  EXPECT_EQ(catalog.Find("sidekiq_cron")->dialect(), CronDialect::kSidekiqCron);
  EXPECT_FALSE(catalog.Find("sidekiq_cron")->allows_reboot());
  EXPECT_EQ(catalog.Find("systemd")->dialect(), CronDialect::kSystemdCalendar);
  EXPECT_FALSE(catalog.Find("systemd")->allows_reboot());
}

TEST(SystemdDescriptorTest, DecodesTypedSettingsAndRefusesWhatCannotWork) {
  const auto defaults =
      Settings<systemd::SystemdSettings>(DecodeSourceBlock("host", "systemd", ""));
  EXPECT_EQ(defaults.bus_address, "");  // the host's system bus
  EXPECT_EQ(defaults.root, "");
  EXPECT_EQ(defaults.unit_directory, "/etc/systemd/system");
  const auto set = Settings<systemd::SystemdSettings>(DecodeSourceBlock(
      "box", "systemd",
      "bus_address: unix:path=/proc/7/root/run/dbus/system_bus_socket, journal_directory: "
      "/proc/7/root/var/log/journal, root: /proc/7/root/, timeout: 5s"));
  EXPECT_EQ(set.bus_address, "unix:path=/proc/7/root/run/dbus/system_bus_socket");
  EXPECT_EQ(set.journal_directory, "/proc/7/root/var/log/journal");
  EXPECT_EQ(set.root, "/proc/7/root");  // without the trailing '/'
  EXPECT_EQ(set.timeout, std::chrono::seconds(5));
  EXPECT_NE(
      Error("systemd", "bus_address: /run/dbus/system_bus_socket").find("is not a D-Bus address"),
      std::string::npos);
  EXPECT_NE(Error("systemd", "root: proc/7/root").find("root: must be an absolute path"),
            std::string::npos);
}

TEST(KubernetesDescriptorTest, DecodesTypedSettings) {
  const auto defaults =
      Settings<kubernetes::KubernetesSettings>(DecodeSourceBlock("prod", "kubernetes", ""));
  EXPECT_EQ(defaults.kubeconfig, "");  // found from $KUBECONFIG or $HOME when the source is made
  EXPECT_EQ(defaults.page_size, 500);
  EXPECT_FALSE(defaults.timeout.has_value());
  EXPECT_TRUE(defaults.namespaces.empty());

  const auto set = Settings<kubernetes::KubernetesSettings>(DecodeSourceBlock(
      "prod", "kubernetes",
      "kubeconfig: kube/config, context: prod, namespaces: [batch, ops, batch], page_size: 50, "
      "timeout: 1m30s, runs_dir: runs"));
  // A kubeconfig that does not exist is no problem here: reading it is the source's job.
  EXPECT_EQ(set.kubeconfig, "/spec/kube/config");
  EXPECT_EQ(set.context, "prod");
  EXPECT_EQ(set.namespaces, (std::vector<std::string>{"batch", "ops"}));
  EXPECT_EQ(set.page_size, 50);
  EXPECT_EQ(set.timeout, std::chrono::seconds(90));
  EXPECT_EQ(set.runs_dir, "/spec/runs");

  const auto in_cluster = Settings<kubernetes::KubernetesSettings>(
      DecodeSourceBlock("prod", "kubernetes", "in_cluster: true, namespaces: batch"));
  EXPECT_TRUE(in_cluster.in_cluster);
  EXPECT_EQ(in_cluster.namespaces, (std::vector<std::string>{"batch"}));
}

TEST(KubernetesDescriptorTest, ReportsEveryProblemWithItsPosition) {
  EXPECT_EQ(Error("kubernetes", "page_size: \"0\""),
            "/spec/spec.yaml:3:36: sources.s.page_size: expected a whole number from 1 to 10000, "
            "got the value \"0\"");
  EXPECT_EQ(Error("kubernetes", "page_size: 10001"),
            "/spec/spec.yaml:3:36: sources.s.page_size: expected a whole number from 1 to 10000, "
            "got the value \"10001\"");
  EXPECT_EQ(Error("kubernetes", "page_size: many"),
            "/spec/spec.yaml:3:36: sources.s.page_size: expected a whole number from 1 to 10000, "
            "got the value \"many\"");
  EXPECT_EQ(Error("kubernetes", "namespaces: Bad_NS"),
            "/spec/spec.yaml:3:37: sources.s.namespaces: \"Bad_NS\" is not a namespace name "
            "(lower-case letters, digits and '-', at most 63 characters)");
  EXPECT_EQ(Error("kubernetes", "in_cluster: true, kubeconfig: /k, in_cluster_typo: 1"),
            "/spec/spec.yaml:3:37: sources.s.in_cluster: true cannot be combined with kubeconfig "
            "or context\n"
            "/spec/spec.yaml:3:59: sources.s.in_cluster_typo: unknown key (known keys: type, "
            "kubeconfig, context, in_cluster, namespaces, page_size, runs_dir, timeout)");
  EXPECT_EQ(Error("kubernetes", "in_cluster: yes"),
            "/spec/spec.yaml:3:37: sources.s.in_cluster: expected true or false, got the value "
            "\"yes\"");
  EXPECT_EQ(Error("kubernetes", "timeout: 0s"),
            "/spec/spec.yaml:3:34: sources.s.timeout: must be longer than 0s");
}

TEST(GitHubActionsDescriptorTest, DecodesTypedSettingsAndJobKeys) {
  const auto settings = Settings<github_actions::GitHubActionsSettings>(DecodeSourceBlock(
      "ci", "github_actions",
      "repository: acme/widgets, token_file: token, api_url: \"https://ghe.example/api/v3/\", "
      "branch: main, min_interval: 2m, ca_file: /etc/ca.pem"));
  EXPECT_EQ(settings.repository, "acme/widgets");
  EXPECT_EQ(settings.token_file, "/spec/token");
  EXPECT_EQ(settings.api_url, "https://ghe.example/api/v3");
  EXPECT_EQ(settings.branch, "main");
  EXPECT_EQ(settings.min_interval, std::chrono::seconds(120));
  EXPECT_EQ(settings.ca_file, "/etc/ca.pem");
  EXPECT_EQ(Settings<github_actions::GitHubActionsSettings>(
                DecodeSourceBlock("ci", "github_actions", "repository: a/b"))
                .api_url,
            "https://api.github.com");

  auto spec = ParseSpec(R"(version: 1
sources: {ci: {type: github_actions, repository: acme/widgets}}
jobs:
  - {role: r, source: ci, schedule: "0 3 * * *", spec_version: "1", workflow: w.yml,
     require_concurrency: true}
)",
                        "/spec/spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->jobs[0].workflow(), "w.yml");
  EXPECT_TRUE(spec->jobs[0].require_concurrency());
  EXPECT_EQ(spec->jobs[0].schedule.policy(), DstPolicy::kWallClock);
}

TEST(GitHubActionsDescriptorTest, ReportsEveryProblemWithItsPosition) {
  EXPECT_EQ(Error("github_actions", "repository: a/b, token_file: /t, token_env: T"),
            "/spec/spec.yaml:3:73: sources.s.token_env: token_file and token_env exclude each "
            "other");
  EXPECT_EQ(Error("github_actions", "repository: a/b, api_url: ftp://x"),
            "/spec/spec.yaml:3:55: sources.s.api_url: \"ftp://x\" is not an http:// or https:// "
            "URL");
  EXPECT_EQ(Error("github_actions", "repository: a/b/c"),
            "/spec/spec.yaml:3:41: sources.s.repository: expected owner/name, got \"a/b/c\"");
  EXPECT_EQ(Error("github_actions", "token_env: T"),
            "/spec/spec.yaml:3:6: sources.s.repository: missing required key");
  // A workflow on a job of another type, and an empty one.
  auto spec = ParseSpec(R"(version: 1
sources: {ci: {type: github_actions, repository: a/b}, demo: {type: file, path: x.yaml}}
jobs:
  - {role: a, source: demo, schedule: "0 3 * * *", spec_version: "1", workflow: w.yml}
  - {role: b, source: ci, schedule: "0 3 * * *", spec_version: "1", workflow: ""}
)",
                        "/spec/spec.yaml", BuiltInCatalog());
  EXPECT_EQ(spec.error(),
            "/spec/spec.yaml:4:81: jobs[0].workflow: only github_actions jobs name a workflow "
            "file\n"
            "/spec/spec.yaml:5:79: jobs[1].workflow: empty");
}

TEST(CrontabDescriptorTest, DecodesTypedSettings) {
  const auto defaults =
      Settings<crontab::CrontabSettings>(DecodeSourceBlock("host", "crontab", ""));
  EXPECT_TRUE(defaults.paths.empty());  // the source's defaults
  EXPECT_EQ(defaults.syslog, "/var/log/syslog");
  EXPECT_FALSE(defaults.journal);
  EXPECT_EQ(defaults.root, "");

  const auto set = Settings<crontab::CrontabSettings>(DecodeSourceBlock(
      "host", "crontab",
      "paths: [/etc/crontab, cron.d], history: journal, journal_directory: /j, root: /host/, "
      "syslog: /log/syslog, timeout: 5s"));
  EXPECT_EQ(set.paths, (std::vector<std::string>{"/etc/crontab", "/spec/cron.d"}));
  EXPECT_TRUE(set.journal);
  EXPECT_EQ(set.journal_directory, "/j");
  EXPECT_EQ(set.root, "/host");
  EXPECT_EQ(set.syslog, "/log/syslog");
  EXPECT_EQ(set.timeout, std::chrono::seconds(5));
  EXPECT_EQ(
      Settings<crontab::CrontabSettings>(DecodeSourceBlock("host", "crontab", "root: /")).root, "");
}

TEST(CrontabDescriptorTest, ReportsEveryProblemWithItsPosition) {
  EXPECT_EQ(Error("crontab", "history: mail, paths: [~/cron.d, /etc/crontab, x]"),
            "/spec/spec.yaml:3:31: sources.s.history: expected syslog or journal, got \"mail\"\n"
            "/spec/spec.yaml:3:45: sources.s.paths[0]: crontab path \"~/cron.d\" is not absolute");
  // A spec given by a relative name leaves relative paths relative: refused as serve would.
  auto relative = ParseSpec("version: 1\nsources: {h: {type: crontab, paths: cron.d}}\njobs: []\n",
                            "spec.yaml", BuiltInCatalog());
  EXPECT_EQ(relative.error(),
            "spec.yaml:2:37: sources.h.paths: crontab path \"cron.d\" is not absolute");
  EXPECT_EQ(Error("crontab", "runs_dir: \"\""), "/spec/spec.yaml:3:32: sources.s.runs_dir: empty");
}

TEST(FileDescriptorTest, DecodesTypedSettings) {
  const auto settings = Settings<file::FileSettings>(
      DecodeSourceBlock("demo", "file", "path: live.yaml, runs_dir: /runs, timeout: 10s"));
  EXPECT_EQ(settings.path, "/spec/live.yaml");
  EXPECT_EQ(settings.runs_dir, "/runs");
  EXPECT_EQ(settings.timeout, std::chrono::seconds(10));
  EXPECT_EQ(Error("file", "timeout: 2d"),
            "/spec/spec.yaml:3:6: sources.s.path: missing required key\n"
            "/spec/spec.yaml:3:28: sources.s.timeout: duration \"2d\" is longer than the maximum "
            "of 1d");
}

TEST(GitLabDescriptorTest, DecodesTypedSettingsJobRefAndTheWorkerInterval) {
  const auto settings = Settings<gitlab::GitLabSettings>(DecodeSourceBlock(
      "ci", "gitlab",
      "project: acme/sub/widgets, token_env: GITLAB_TOKEN, api_url: "
      "\"https://gitlab.example/api/v4/\", ref: main, worker_interval: 5m, ca_file: /etc/ca.pem"));
  EXPECT_EQ(settings.project, "acme/sub/widgets");
  EXPECT_EQ(settings.token_env, "GITLAB_TOKEN");
  EXPECT_EQ(settings.api_url, "https://gitlab.example/api/v4");
  EXPECT_EQ(settings.ref, "main");
  EXPECT_EQ(settings.worker_interval, std::chrono::seconds(300));
  const auto defaults =
      Settings<gitlab::GitLabSettings>(DecodeSourceBlock("ci", "gitlab", "project: \"42\""));
  EXPECT_EQ(defaults.api_url, "https://gitlab.com/api/v4");
  EXPECT_EQ(defaults.worker_interval, std::chrono::seconds(600));

  EXPECT_EQ(Error("gitlab", "project: widgets"),
            "/spec/spec.yaml:3:30: sources.s.project: expected a project ID or a group/name "
            "path, got \"widgets\"");
  EXPECT_NE(Error("gitlab", "project: a/b, token_env: CI_JOB_TOKEN")
                .find("a CI job token cannot list pipeline schedules"),
            std::string::npos);

  auto spec = ParseSpec(R"(version: 1
sources: {ci: {type: gitlab, project: acme/widgets, ref: main, worker_interval: 7m}}
jobs:
  - {role: a, source: ci, schedule: "0 3 * * *", spec_version: "1", start_grace: 2m}
  - {role: b, source: ci, schedule: "0 0 L * *", spec_version: "1", ref: release}
)",
                        "/spec/spec.yaml", BuiltInCatalog());
  ASSERT_TRUE(spec.ok()) << spec.error();
  // The worker may start a run up to its interval late.
  EXPECT_EQ(spec->jobs[0].start_grace, 2 * 60 + 7 * 60);
  const auto& source = *spec->sources.at("ci").SettingsAs<gitlab::GitLabSettings>();
  EXPECT_EQ(gitlab::DesiredRef(spec->jobs[0], source), "main");
  EXPECT_EQ(gitlab::DesiredRef(spec->jobs[1], source), "release");
  EXPECT_EQ(spec->jobs[1].schedule.expression().dialect(), CronDialect::kGitLab);

  auto elsewhere = ParseSpec(R"(version: 1
sources: {c: {type: crontab}}
jobs:
  - {role: a, source: c, schedule: "0 3 * * *", spec_version: "1", ref: main}
)",
                             "/spec/spec.yaml", BuiltInCatalog());
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.error().find("only gitlab jobs name the ref"), std::string::npos)
      << elsewhere.error();
}

}  // namespace
}  // namespace schedwatch
