// reconcile: observe -> classify -> re-read -> repair -> verify.
// Only `missing` roles are repaired, only from the job's literal template, only after a second
// read (and a third, under a lock, just before writing) confirms the absence, and only with
// apply. Existing objects are never modified or deleted: duplicates, drift and inactive jobs are
// reported, not fixed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "schedwatch/spec.h"
#include "sources/repairer.h"
#include "sources/source.h"

namespace schedwatch {

// The lock's default: reconcile.lock in the state directory, $STATE_DIRECTORY (systemd's
// StateDirectory=, which the unit sets) or else /var/lib/schedwatch: a directory only the
// exporter's user writes, unlike /tmp, where any user could hold the lock.
std::string DefaultReconcileLockFile();

struct ReconcileOptions {
  bool apply = false;
  std::string ledger_file;  // empty: no ledger
  // Its directory must be writable by no one but its owner, and owned by this user or root:
  // otherwise the lock is not taken (anyone could hold it).
  std::string lock_file = DefaultReconcileLockFile();
  std::chrono::milliseconds confirm_delay{std::chrono::seconds(2)};
  std::chrono::milliseconds verify_interval{std::chrono::seconds(1)};
  int verify_attempts = 10;
  std::function<std::int64_t()> clock;  // Unix seconds; the system clock when empty
  // When set, ends the waits and reads and creates nothing more (rows say "skipped: shutting
  // down"); a creation under way finishes.
  const std::atomic<bool>* cancelled = nullptr;
  // Seams for tests; MakeSource and MakeRepairer when empty.
  std::function<Result<std::unique_ptr<Source>>(const SourceOptions&)> make_source;
  std::function<Result<std::unique_ptr<Repairer>>(const SourceSpec&)> make_repairer;
};

struct ReconcileRow {
  std::string role;
  std::string source;
  std::string condition;  // "missing", "duplicate,drift", "ok", ...
  std::string action;     // "would create", "created", "verified", "skipped: duplicate", ...
  bool needs_person = false;
};

struct ReconcileReport {
  std::vector<ReconcileRow> rows;  // in spec order
  bool lock_unavailable = false;   // a repair could not take the lock
  bool lock_taken = false;         // a repair took it
  int ExitCode() const;            // 0 nothing needs a person, else 1
  std::string Render() const;      // an aligned table
};

ReconcileReport Reconcile(const Spec& spec, const ReconcileOptions& options);

// --reconcile.on-start: reconcile --apply for each spec handed over, on a thread of its own (a
// repair waits for verification; refreshes and scrapes do not), one run at a time; a spec that
// arrives during a run waits, only the newest. Rows other than `verified` are logged.
// Destruction cancels the run under way and waits for it.
class BackgroundReconciler {
 public:
  explicit BackgroundReconciler(ReconcileOptions options);
  ~BackgroundReconciler();
  BackgroundReconciler(const BackgroundReconciler&) = delete;
  BackgroundReconciler& operator=(const BackgroundReconciler&) = delete;

  void Submit(std::shared_ptr<const Spec> spec);

  // Called (on the reconciler's thread, or at once with the last outcome) after each run that
  // needed the lock: whether it could not be taken.
  void OnLockOutcome(std::function<void(bool unavailable)> listener);

 private:
  void Loop();

  ReconcileOptions options_;
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<const Spec> next_;
  std::mutex listener_mutex_;
  std::function<void(bool)> lock_listener_;  // guarded by listener_mutex_
  std::optional<bool> lock_unavailable_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace schedwatch
