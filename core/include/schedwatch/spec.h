// The desired-state spec: which roles must exist, where, on which
// schedule and spec version. Loaded strictly: every problem is reported with file, line,
// column and field path, and nothing runs on a bad spec.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/compact_optional.h"
#include "schedwatch/interned_text.h"
#include "schedwatch/job_alerting.h"
#include "schedwatch/result.h"
#include "schedwatch/schedule.h"
#include "schedwatch/shard.h"
#include "schedwatch/source_type.h"
#include "schedwatch/yaml_tree.h"

namespace schedwatch {

// Fire times and periods are computed from this fixed instant (2026-01-01T00:00:00Z) so that
// generated thresholds and rules do not change with the day they are generated.
inline constexpr std::int64_t kPeriodReference = 1767225600;

// Specs larger than this are refused before parsing unless --config.max-size says otherwise
// (1,000,000 roles are 81 to 105 MB, one line each).
inline constexpr std::size_t kDefaultMaxSpecBytes = 256u << 20;

struct SourceSpec {
  std::string name;
  std::string type;  // a type of the catalog the spec was parsed with
  // The type's own settings struct, decoded by its descriptor. Shared: specs are copied.
  std::shared_ptr<const SourceSettings> settings;
  int line = 0;

  // The settings as the type's struct; null when they are of another type (or none).
  template <typename T>
  const T* SettingsAs() const {
    return dynamic_cast<const T*>(settings.get());
  }
};

struct ProgressSpec {
  std::string file;
  std::int64_t stale_after = 0;
};

// Where a job's setting came from, so that a person reading why a condition holds also sees
// why its threshold is what it is.
enum class ValueOrigin : std::uint8_t { kBuiltIn, kDefaults, kJob, kDerived };

constexpr std::string_view ValueOriginText(ValueOrigin origin) {
  switch (origin) {
    case ValueOrigin::kBuiltIn:
      return "built-in default";
    case ValueOrigin::kDefaults:
      return "spec defaults";
    case ValueOrigin::kJob:
      return "set on the job";
    case ValueOrigin::kDerived:
      return "derived: 2 × period + max_runtime";
  }
  return "";
}

// The keys few jobs set, held apart so that a job without any costs one pointer (100,000 jobs
// are held at once).
struct JobExtras {
  std::optional<ProgressSpec> progress;
  std::string template_path;  // resolved against the spec's directory
  std::string workflow;
  std::string success_metric;
  // Where schedwatch_run records this role's runs: `<runs_dir>/<role>`, from the job's
  // `runs_dir:` or its source's; empty when neither is set.
  std::string runs_dir;
  bool require_concurrency = false;  // github_actions: flag a workflow without `concurrency:`
};

struct JobSpec {
  std::string role;
  InternedText source;  // a key of Spec::sources
  InternedText source_type;
  Schedule schedule;
  InternedText timezone;
  std::string spec_version;
  std::int64_t start_grace = 0;
  std::int64_t max_runtime = 0;
  std::int64_t alert_for = 0;
  OptionalTime period;  // seconds; none for @reboot
  // In force: the override, else 2 x period + max_runtime; nullopt when neither exists.
  OptionalTime stale_after;  // seconds
  int missed_starts = 2;
  int line = 0;
  bool stale_after_overridden = false;
  struct Origins {
    ValueOrigin timezone = ValueOrigin::kBuiltIn;
    ValueOrigin start_grace = ValueOrigin::kBuiltIn;
    ValueOrigin max_runtime = ValueOrigin::kBuiltIn;
    ValueOrigin missed_starts = ValueOrigin::kBuiltIn;
    ValueOrigin alert_for = ValueOrigin::kBuiltIn;
    ValueOrigin stale_after = ValueOrigin::kDerived;  // kJob when overridden
  } origins;
  // The type's own job keys (DecodeJob fills it); null when the type has none. Shared: specs
  // are copied.
  std::shared_ptr<const JobSettings> settings;
  // labels and severity (job_alerting.h); null when the job and the defaults set none.
  std::shared_ptr<const JobAlerting> alerting;
  // null when the job sets none of them.
  std::shared_ptr<const JobExtras> extras;

  // The type's job settings as its struct; null when they are of another type (or none).
  template <typename T>
  const T* SettingsAs() const {
    return dynamic_cast<const T*>(settings.get());
  }
  const JobAlerting& Alerting() const { return alerting ? *alerting : NoAlerting(); }

  const std::optional<ProgressSpec>& progress() const { return Extras().progress; }
  const std::string& template_path() const { return Extras().template_path; }
  const std::string& workflow() const { return Extras().workflow; }
  const std::string& success_metric() const { return Extras().success_metric; }
  const std::string& runs_dir() const { return Extras().runs_dir; }
  bool require_concurrency() const { return Extras().require_concurrency; }
  // For the spec's parser: the job's own extras, made when first set.
  JobExtras& MutableExtras();

 private:
  const JobExtras& Extras() const;
};

struct Spec {
  std::string file;  // as given
  int version = 1;
  std::map<std::string, SourceSpec> sources;
  std::vector<JobSpec> jobs;  // in file order
  // The roles of the whole spec, when `jobs` holds one shard's only.
  std::optional<std::size_t> whole_spec_roles;

  const JobSpec* FindJob(std::string_view role) const;
  std::size_t SpecRoles() const { return whole_spec_roles ? *whole_spec_roles : jobs.size(); }
};

// Parses spec text; `catalog` holds the source types it may use. `file` names it in messages
// and anchors relative paths. Every problem is reported, one per line (at most
// kMaxSpecProblems), each reading "FILE:LINE:COLUMN: FIELD.PATH: what is wrong".
// Every job is checked, but only those `keep` owns are kept (whole_spec_roles counts all).
// The jobs are decoded as the text streams by when the sources come before them, so that a
// million jobs cost one job's tree at a time.
Result<Spec> ParseSpec(std::string_view text, const std::string& file, const SourceCatalog& catalog,
                       const ShardAssignment& keep = {});
// The same, the text read in pieces: `open` gives a YamlDocument::Reader from its start (asked
// again for a spec whose defaults follow its jobs). A large spec's text is never held whole.
using SpecOpener = std::function<YamlDocument::Reader()>;
Result<Spec> ParseSpec(const SpecOpener& open, std::size_t size_hint, const std::string& file,
                       const SourceCatalog& catalog, const ShardAssignment& keep = {});

// Past this many problems the rest of a bad spec is summed up in one line.
inline constexpr std::size_t kMaxSpecProblems = 50;

}  // namespace schedwatch
