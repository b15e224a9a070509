// The metric contract, tested as kube-state-metrics tests its stable metrics: the golden list
// tests/golden/stable-metrics.txt (name, type, labels, help) against the contract
// (schedwatch/metrics.h) and against what the exporter renders. A stable metric that
// disappears, changes type or labels, or a metric that appears unlisted, fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "exporter/exposition/exposition.h"
#include "exporter/exposition/self_metrics.h"
#include "exporter/http/web_rate_limit.h"
#include "exporter/pages/web_pages.h"
#include "exporter/refresh/refresher.h"
#include "schedwatch/metrics.h"
#include "sources/catalog.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
const fs::path kSourceDir = SCHEDWATCH_SOURCE_DIR;
const fs::path kStableList = kSourceDir / "tests/golden/stable-metrics.txt";
constexpr std::int64_t kNow = 1796040000;

struct Stable {
  std::string type;
  std::string labels;  // comma-separated, in the series' order; "-" for none
  std::string help;
  bool operator==(const Stable& other) const {
    return type == other.type && labels == other.labels && help == other.help;
  }
};

std::ostream& operator<<(std::ostream& out, const Stable& stable) {
  return out << stable.type << " " << stable.labels << " " << stable.help;
}

// "name type labels help..." per line; '#' lines are comments.
std::map<std::string, Stable> ReadStableList() {
  std::map<std::string, Stable> list;
  std::istringstream lines(testing::ReadFile(kStableList));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    Stable stable;
    fields >> name >> stable.type >> stable.labels;
    std::getline(fields >> std::ws, stable.help);
    EXPECT_TRUE(list.emplace(name, stable).second) << name << " listed twice";
  }
  return list;
}

std::string ContractLine(const metrics::Metric& metric) {
  return std::string(metric.name) + " " + std::string(metrics::TypeName(metric.type)) + " " +
         (metric.labels.empty() ? "-" : std::string(metric.labels)) + " " +
         std::string(metric.help);
}

// Families of a text exposition: TYPE and HELP from the comments, label names from the samples
// (every sample of a family must carry the same names in the same order). A family listed with
// a trailing "..." may carry the spec's labels after the listed ones, sorted by name.
std::map<std::string, Stable> Families(const std::string& exposition,
                                       const std::map<std::string, Stable>& stable = {}) {
  std::map<std::string, Stable> families;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      auto space = line.find(' ', 7);
      families[line.substr(7, space - 7)].help = line.substr(space + 1);
    } else if (line.rfind("# TYPE ", 0) == 0) {
      auto space = line.find(' ', 7);
      families[line.substr(7, space - 7)].type = line.substr(space + 1);
    } else if (!line.empty()) {
      auto brace = line.find('{');
      std::string name = line.substr(0, std::min(brace, line.find(' ')));
      std::string labels;
      if (brace != std::string::npos) {
        // Label values here hold no '"' escapes that matter: names end at '=', values at '"'.
        std::size_t at = brace + 1;
        while (at < line.size() && line[at] != '}') {
          auto equals = line.find('=', at);
          labels += (labels.empty() ? "" : ",") + line.substr(at, equals - at);
          auto close = line.find('"', equals + 2);
          while (line[close - 1] == '\\') close = line.find('"', close + 1);
          at = close + 1;
          if (line[at] == ',') ++at;
        }
      }
      // A histogram's _bucket, _sum and _count series are its family's; le is the histogram's.
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        std::string_view text(name), end(suffix);
        if (text.size() <= end.size() || text.substr(text.size() - end.size()) != end) continue;
        std::string base = name.substr(0, name.size() - end.size());
        auto family = families.find(base);
        if (family == families.end() || family->second.type != "histogram") continue;
        name = base;
        if (end == "_bucket") {
          std::size_t le = labels.rfind(",le");
          EXPECT_EQ(le, labels.size() - 3) << "a bucket without le last: " << line;
          labels = labels.substr(0, le);
        }
      }
      if (labels.empty()) labels = "-";
      auto listed = stable.find(name);
      if (listed != stable.end() && listed->second.labels.size() > 4 &&
          listed->second.labels.compare(listed->second.labels.size() - 4, 4, ",...") == 0) {
        std::string fixed = listed->second.labels.substr(0, listed->second.labels.size() - 4);
        EXPECT_EQ(labels.rfind(fixed, 0), 0u) << name << " lost its listed labels: " << line;
        std::string extra = labels.size() > fixed.size() ? labels.substr(fixed.size() + 1) : "";
        std::vector<std::string> names;
        for (std::size_t at = 0; at < extra.size();) {
          std::size_t comma = std::min(extra.find(',', at), extra.size());
          names.push_back(extra.substr(at, comma - at));
          at = comma + 1;
        }
        EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << line;
        labels = fixed + ",...";
      }
      Stable& family = families[name];
      if (family.labels.empty()) family.labels = labels;
      EXPECT_EQ(family.labels, labels) << "series of " << name << " differ in labels: " << line;
    }
  }
  return families;
}

// Every family in `exposition` is stable and rendered as listed.
void ExpectOnlyStableFamilies(const std::string& exposition,
                              const std::map<std::string, Stable>& stable) {
  for (const auto& [name, family] : Families(exposition, stable)) {
    auto listed = stable.find(name);
    if (listed == stable.end()) {
      ADD_FAILURE() << name << " is rendered but not in " << kStableList
                    << ": add it to the contract and the list";
      continue;
    }
    EXPECT_EQ(family, listed->second) << name << " is rendered differently from the list";
  }
}

TEST(MetricContractTest, TheContractIsTheStableList) {
  auto stable = ReadStableList();
  std::set<std::string> in_contract;
  for (const metrics::Metric* metric : metrics::kAll) {
    std::string name(metric->name);
    in_contract.insert(name);
    auto listed = stable.find(name);
    if (listed == stable.end()) {
      ADD_FAILURE() << "new metric not in the stable list; add this line to " << kStableList
                    << ":\n"
                    << ContractLine(*metric);
      continue;
    }
    Stable declared{std::string(metrics::TypeName(metric->type)),
                    metric->labels.empty() ? "-" : std::string(metric->labels),
                    std::string(metric->help)};
    EXPECT_EQ(declared, listed->second) << name << " changed type, labels or help";
  }
  for (const auto& [name, listed] : stable) {
    EXPECT_TRUE(in_contract.count(name)) << "stable metric " << name << " left the contract";
  }
}

TEST(MetricContractTest, TheExampleExpositionHasOnlyStableMetrics) {
  auto spec = LoadSpecFile((kSourceDir / "examples/desired-state.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.config_file = (kSourceDir / "examples/desired-state.yaml").string();
  options.ledger_file = (kSourceDir / "examples/ledger.json").string();
  options.confirm_delay = std::chrono::milliseconds(10);
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok()) << refresher.error();
  (*refresher)->RefreshOnce();
  ExpectOnlyStableFamilies((*refresher)->Current()->metrics, ReadStableList());
}

// --reconcile.on-start: a lock it could not take shows at once, not after the next refresh.
TEST(MetricContractTest, TheReconcileLockShowsOnceAReconcileRan) {
  auto spec = LoadSpecFile((kSourceDir / "examples/desired-state.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  RefresherOptions options;
  options.config_file = (kSourceDir / "examples/desired-state.yaml").string();
  options.clock = [] { return kNow; };
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  ASSERT_TRUE(refresher.ok()) << refresher.error();
  auto text = [&] { return std::string((*refresher)->Current()->metrics); };
  EXPECT_EQ(text().find("schedwatch_reconcile_lock_unavailable"), std::string::npos);
  (*refresher)->SetReconcileLockUnavailable(true);
  EXPECT_NE(text().find("\nschedwatch_reconcile_lock_unavailable 1\n"), std::string::npos);
  (*refresher)->SetReconcileLockUnavailable(false);
  EXPECT_NE(text().find("\nschedwatch_reconcile_lock_unavailable 0\n"), std::string::npos);
}

// A role with every value set, and a source with a problem: every family renders.
TEST(MetricContractTest, EveryStableMetricIsRendered) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources: {s: {type: file, path: live.yaml}}
jobs:
  - role: full
    source: s
    schedule: "*/5 * * * *"
    spec_version: "1"
    runs_dir: runs
    progress: {file: checkpoint, stale_after: 1h}
    maintenance: [{schedule: "0 1 * * *", duration: 1h}]
)");
  auto spec = LoadSpecFile((dir.path() / "spec.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error();
  auto shared_spec = std::make_shared<const Spec>(std::move(*spec));
  RefreshResult result;
  result.spec = shared_spec;
  result.time = kNow;
  result.complete = true;
  RoleResult role;
  role.job = &shared_spec->jobs[0];
  role.status.registered_objects = role.status.active_objects = role.status.drifted_objects = 1;
  role.status.last_scheduled = role.status.next_scheduled = kNow;
  role.status.history.last_started = role.status.history.last_success = kNow;
  role.status.history.last_failure = role.status.history.running_since = kNow;
  role.status.last_progress = kNow;
  role.status.ledger_mismatch = false;
  role.status.maintenance_until = kNow + 60;
  RunRecordFacts records;
  records.last_duration = 1.5;
  records.last_exit_code = 0;
  records.guarded = true;
  role.records = std::make_shared<const RunRecordFacts>(records);
  role.runs = std::make_shared<const RoleRuns>();
  role.run_counts = {3, 1};
  result.roles.push_back(role);
  auto histogram = std::make_shared<DurationHistogram>();
  histogram->Observe(42);
  result.durations.push_back({role.job, histogram});
  SourceStatus source;
  source.name = "s";
  source.type = "file";
  source.up = true;
  source.history_up = true;
  source.last_sync = kNow;
  result.sources.push_back(source);
  SourceStatus api = source;  // a source that calls a rate-limited API
  api.name = "ci";
  api.type = "github_actions";
  api.requests = SourceRequestCounts{{{"200", 7}, {"304", 5}}, 4988, 60};
  result.sources.push_back(api);

  SelfMetrics self;
  self.SetReload(true, kNow);
  self.SetClockStep(3600, kNow);
  self.SetReconcileLockUnavailable(false);
  self.Update(result, {{"s", {{"malformed_object", "line 1"}}}}, {{"full", 2}});
  ChunkedTextWriter writer(nullptr);
  RenderRoleMetrics(result, {}, writer);
  self.Render(result, {}, writer);
  std::string exposition = writer.Finish();
  RenderPageMetrics({3, 2, 1}, {}, exposition);  // appended at each scrape
  RenderRateLimitMetrics(4, {}, exposition);

  auto stable = ReadStableList();
  ExpectOnlyStableFamilies(exposition, stable);
  auto families = Families(exposition, stable);
  for (const auto& [name, listed] : stable) {
    EXPECT_TRUE(families.count(name)) << "stable metric " << name << " is no longer rendered";
  }
}

}  // namespace
}  // namespace schedwatch
