// The exporter's metrics about itself and its sources, kept between refreshes and rendered in
// the exposition after the per-role families. Names, types, labels and help come from the
// metric contract (schedwatch/metrics.h). Thread-safe: reloads set their gauges from another
// thread than the refresh.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exporter/exposition/chunked_text.h"
#include "exporter/exposition/exposition.h"
#include "exporter/state/state.h"
#include "sources/source.h"

namespace schedwatch {

class SelfMetrics {
 public:
  SelfMetrics();

  // After a refresh: every source's gauges, its problems counted by reason, the heartbeat, and
  // skipped duplicate runs counted per role. Series of sources that left the spec, and of roles
  // that no longer have run records, go.
  void Update(const RefreshResult& result,
              const std::map<std::string, std::vector<SourceProblem>>& problems,
              const std::map<std::string, int>& new_duplicates_prevented);

  // After a (re)load: its outcome, and its time when it succeeded.
  void SetReload(bool successful, std::optional<std::int64_t> time);

  // A step of the wall clock, seen by the refresher.
  void SetClockStep(std::int64_t seconds, std::int64_t time);
  // After each reconcile --apply the exporter runs: whether it could not take its lock.
  void SetReconcileLockUnavailable(bool unavailable);

  // Appends the families, by name, series ordered by label values. Before the first refresh
  // (`result` not complete) there is no heartbeat. The shard's gauges are `result`'s.
  void Render(const RefreshResult& result, const ExpositionForm& form,
              ChunkedTextWriter& out) const;

 private:
  struct SourceSeries {
    std::string type;
    bool up = false;
    bool history_up = false;
    std::optional<double> last_sync;
    double sync_duration = 0;
    std::optional<double> unowned;
    std::map<std::string, double> errors;  // by reason
    std::optional<SourceRequestCounts> requests;
  };
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> build_labels_;
  std::map<std::string, SourceSeries> sources_;  // by name
  // (role, source) -> skipped runs counted
  std::map<std::pair<std::string, std::string>, double> duplicates_prevented_;
  double last_cycle_ = 0;
  bool reload_successful_ = true;
  double reload_success_time_ = 0;
  std::optional<std::pair<double, double>> clock_step_;  // seconds, time
  std::optional<bool> reconcile_lock_unavailable_;       // set once a reconcile ran
};

}  // namespace schedwatch
