// The refresh loop. Each refresh runs four stages:
//   read      every source at once, each within its timeout, absences confirmed by a second
//             read, then its jobs' checkpoints and run records; the reconciler's ledger
//             (read_sources.h);
//   observe   the reads and the ledger, per role and source (observe.h);
//   classify  each role (core's Classify);
//   publish   the exposition, rendered once and gzip-compressed, for scrapes and pages.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "exporter/exposition/chunked_text.h"
#include "exporter/exposition/self_metrics.h"
#include "exporter/refresh/observe.h"
#include "exporter/refresh/read_sources.h"
#include "exporter/refresh/run_history.h"
#include "exporter/state/state.h"
#include "schedwatch/platform/clock.h"
#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch {

// A wall clock that moved more than this against the monotonic clock between two refreshes
// was stepped (NTP slews by at most 0.5 ms a second; a step is seconds to years).
inline constexpr std::int64_t kClockStepThreshold = 30;
// For this long after a step (monotonic time), time-based conditions that only the stepped
// clock raises are held (core's Classify with a ClockStep). The delay this adds to a genuine
// alert is at most the step's size, as the clock without the step catches up with it.
inline constexpr std::chrono::seconds kClockStepHold{3600};

struct RefresherOptions {
  std::string config_file;
  std::string ledger_file;                            // empty: no ledger
  std::size_t max_spec_bytes = kDefaultMaxSpecBytes;  // --config.max-size, for reloads
  std::chrono::milliseconds interval{std::chrono::seconds(30)};
  std::chrono::milliseconds confirm_delay{std::chrono::seconds(2)};
  std::chrono::milliseconds source_timeout{std::chrono::seconds(10)};  // unless the source sets one
  // Wall clock (UnixSeconds) and monotonic clock (Now) of the refreshes; the real ones when
  // null. Comparing the two between refreshes finds clock steps.
  platform::Clock* time = nullptr;
  // Unix seconds, instead of `time`'s wall clock (tests that pin time); no step detection then.
  std::function<std::int64_t()> clock;
  // Which of N exporters sharing the spec this is: it watches the roles of its shard only.
  ShardAssignment shard;
  // Called with the spec at start-up and after each successful reload (--reconcile.on-start).
  std::function<void(std::shared_ptr<const Spec>)> on_spec_loaded;
};

// What scrapes and pages are served from: immutable once published.
struct Published {
  RefreshResult result;
  // Text exposition 0.0.4 without what a scrape adds (process_*), with its gzip form open for
  // the scrape's lines; chunks unchanged since the previous refresh are shared with it.
  ChunkedText metrics;
  // The same in OpenMetrics 1.0.0, without the scrape's lines and `# EOF`.
  ChunkedText openmetrics;
  std::int64_t counting_since = 0;  // the exporter's start: its counters' `_created`
};

class Refresher {
 public:
  // Fails when a source of the spec cannot be built.
  static Result<std::unique_ptr<Refresher>> Create(RefresherOptions options,
                                                   std::shared_ptr<const Spec> spec);
  ~Refresher();

  void Start();  // the loop, on its own thread
  // Ends the loop, cancels the reads still running and joins every thread. Also on destruction.
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
  struct Config {
    std::shared_ptr<const Spec> spec;  // this shard's roles
    RoleOrder by_role;                 // its jobs
    std::vector<std::shared_ptr<SourceRunner>> runners;
    std::size_t spec_roles = 0;  // in the whole spec
  };
  explicit Refresher(RefresherOptions options);
  Result<std::shared_ptr<Config>> Build(std::shared_ptr<const Spec> spec);
  std::int64_t Now() const;
  // When each job of `to` was first desired: as in `from` (with `since`) for a role both hold,
  // else `now`. Both are walked in role order.
  static DesiredSinceList CarryDesiredSince(const Config* from, const DesiredSinceList& since,
                                            const Config& to, std::int64_t now);
  // The stages after reading.
  RefreshResult ClassifyRoles(Observed& observed, const Config& config, std::int64_t now,
                              const std::optional<ClockStep>& recent_step);
  void LogChanges(const RefreshResult& result);
  void Publish(RefreshResult result);
  void ApplyPendingConfig();
  void RepublishSelfMetrics();
  // The step of the wall clock since the last refresh, if any, and the hold window's step.
  std::optional<ClockStep> WatchClock(std::int64_t now);
  // A run_in_future problem for the role's times set aside, counted once while it stands.
  void AddFutureProblem(Observed& observed, const RoleResult& role, std::int64_t now,
                        std::map<std::string, std::int64_t>& counted);

 public:
  // --reconcile.on-start: whether its last run could not take the lock (shown at once).
  void SetReconcileLockUnavailable(bool unavailable);

 private:
  RefresherOptions options_;
  mutable std::mutex mutex_;  // guards config_, pending_config_, published_
  std::shared_ptr<Config> config_;
  std::shared_ptr<Config> pending_config_;  // built by Reload, applied by the next refresh
  std::shared_ptr<const Published> published_;
  // Written and read by the refresh only (under refresh_mutex_) and Create.
  DesiredSinceList desired_since_;
  RunHistoryStore run_history_;  // refresh thread only
  Observer observer_;            // refresh thread only
  // Clock-step detection, refresh thread only: the last refresh's wall and monotonic times,
  // the steps within the hold window (summed: two that cancel hold nothing) and its end.
  platform::Clock& time_;
  std::optional<std::int64_t> last_wall_;
  platform::Clock::TimePoint last_monotonic_{};
  std::optional<ClockStep> recent_step_;
  platform::Clock::TimePoint hold_until_{};
  // Future times already counted in schedwatch_source_errors_total, by role: its latest one.
  std::map<std::string, std::int64_t> future_counted_;
  std::int64_t counting_since_ = 0;  // when Create ran: what the counters count from
  SourceReaders readers_;
  SelfMetrics self_metrics_;
  std::mutex refresh_mutex_;  // one refresh at a time
  std::mutex reload_mutex_;   // one reload at a time
  std::mutex publish_mutex_;  // one rendering at a time: a refresh's or a reload's

  std::atomic<bool> ready_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> refresh_now_{false};
  std::condition_variable wake_;
  std::mutex wake_mutex_;
  std::thread thread_;
};

}  // namespace schedwatch
