// The refresh loop: list every source concurrently (each with a timeout), confirm apparent
// absences with a second read, classify every role, and publish finished bytes for scrapes.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "exporter/gzip.h"
#include "exporter/run_history.h"
#include "exporter/state.h"
#include "schedwatch/result.h"
#include "sources/run_record.h"
#include "sources/source.h"

namespace schedwatch {

struct RefresherOptions {
  std::string config_file;
  std::string ledger_file;  // empty: no ledger
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds confirm_delay{std::chrono::seconds(2)};
  std::chrono::milliseconds source_timeout{std::chrono::seconds(10)};  // unless the source sets one
  std::function<std::int64_t()> clock;  // Unix seconds; the system clock when empty
  // Called with the spec at start-up and after each successful reload (--reconcile.on-start).
  std::function<void(std::shared_ptr<const Spec>)> on_spec_loaded;
};

// What scrapes and pages are served from: immutable once published.
struct Published {
  RefreshResult result;
  std::string metrics;      // text exposition 0.0.4, without what a scrape adds (process_*)
  GzipPrefix metrics_gzip;  // the same, gzip-compressed, open for the scrape's lines
};

class Refresher {
 public:
  // Fails when a source of the spec cannot be built.
  static Result<std::unique_ptr<Refresher>> Create(RefresherOptions options,
                                                   std::shared_ptr<const Spec> spec);
  ~Refresher();

  void Start();  // the loop, on its own thread
  void Stop();

  // One refresh, synchronously (the loop calls this; so do tests).
  void RefreshOnce();

  // Re-reads and builds the config file; the new spec takes over at the start of the next
  // refresh (which is woken), so a reload never waits for a source read. Concurrent reloads run
  // one after the other. On error the last good spec keeps running, the error is logged and
  // returned, and schedwatch_exporter_config_last_reload_successful reads 0 at once.
  Result<bool> Reload();

  std::shared_ptr<const Published> Current() const;
  bool Ready() const { return ready_.load(); }

 private:
  struct Runner;
  struct Config {
    std::shared_ptr<const Spec> spec;
    std::vector<std::shared_ptr<Runner>> runners;
  };
  explicit Refresher(RefresherOptions options);
  Result<std::shared_ptr<Config>> Build(std::shared_ptr<const Spec> spec);
  std::int64_t Now() const;
  void UpdateSelfMetrics(const RefreshResult& result,
                         const std::map<std::string, std::vector<SourceProblem>>& problems);
  void Publish(RefreshResult result);
  // schedwatch_run's records of `job`: history, counters and problems.
  void ApplyRunRecords(const JobSpec& job, RoleObservation& observation, RoleResult& role,
                       RefreshResult& result,
                       std::map<std::string, std::vector<SourceProblem>>& problems);
  void ForgetRunRecordRoles(const Spec& spec);
  void ApplyPendingConfig();
  void RepublishSelfMetrics();

  RefresherOptions options_;
  mutable std::mutex mutex_;  // guards config_, published_, desired_since_
  std::shared_ptr<Config> config_;
  std::shared_ptr<Config> pending_config_;  // built by Reload, applied by the next refresh
  std::shared_ptr<const Published> published_;
  std::map<std::string, std::int64_t> desired_since_;
  std::map<std::string, std::string> last_conditions_;  // for logging changes; refresh thread only
  RunHistoryStore run_history_;                         // refresh thread only
  // Run records, by role (refresh thread only): files read (unchanged ones are not read again,
  // bad ones reported once), and skipped duplicates already counted in
  // schedwatch_job_duplicate_runs_prevented_total.
  std::map<std::string, RunRecordCache> run_record_cache_;
  std::map<std::string, std::set<std::string>> prevented_counted_;
  std::mutex refresh_mutex_;                // one refresh at a time
  std::mutex reload_mutex_;                 // one reload at a time
  std::mutex publish_mutex_;                // one rendering at a time: a refresh's or a reload's
  std::size_t expected_metrics_bytes_ = 0;  // size of the last exposition

  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> refresh_now_{false};
  std::condition_variable wake_;
  std::mutex wake_mutex_;
  std::thread thread_;

  prometheus::Registry registry_;
  prometheus::Family<prometheus::Gauge>& source_up_;
  prometheus::Family<prometheus::Gauge>& source_last_sync_;
  prometheus::Family<prometheus::Gauge>& source_sync_duration_;
  prometheus::Family<prometheus::Counter>& source_errors_;
  prometheus::Family<prometheus::Gauge>& source_unowned_;
  prometheus::Family<prometheus::Counter>& duplicate_runs_prevented_;
  prometheus::Gauge& last_cycle_;
  prometheus::Gauge& reload_successful_;
  prometheus::Gauge& reload_success_time_;
};

}  // namespace schedwatch
