#include "reconcile/reconcile.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "reconcile/ledger.h"
#include "schedwatch/classify.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/file_lock.h"
#include "schedwatch/platform/log.h"
#include "schedwatch/timefmt.h"
#include "sources/absence.h"

namespace schedwatch {
namespace {

// A lock in a directory another user can write is not one: they can create it first and hold
// it (every repair waits, then skips), or put something else in its place.
std::string DirectoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

Result<bool> CheckLockDirectory(const std::string& path) {
  std::string directory = DirectoryOf(path);
  // A first run makes the state directory (/var/lib/schedwatch) when it is safe to.
  if (auto made = platform::EnsureStateDirectory(directory); !made) return Error{made.error()};
  struct stat status {};
  if (lstat(directory.c_str(), &status) != 0) {
    return Error{fmt::format("lock directory {}: {}", directory, std::strerror(errno))};
  }
  if (!S_ISDIR(status.st_mode)) {
    return Error{fmt::format("lock directory {} is not a directory", directory)};
  }
  uid_t self = geteuid();
  if (status.st_uid != self && status.st_uid != 0 && self != 0) {
    return Error{fmt::format("lock directory {} belongs to uid {}, not to this user (uid {})",
                             directory, status.st_uid, self)};
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error{fmt::format(
        "lock directory {} is writable by other users (mode {:o}), who could hold the lock; "
        "give --lock-file a directory only this user writes, such as the state directory",
        directory, status.st_mode & 07777)};
  }
  return true;
}

// Two reconcilers never repair at the same time: an exclusive lock on a file, waited for.
Result<std::unique_ptr<platform::FileLock>> AcquireLock(const std::string& path,
                                                        std::chrono::seconds wait,
                                                        const std::atomic<bool>& cancelled) {
  if (auto safe = CheckLockDirectory(path); !safe) {
    return Error{"cannot take the lock: " + safe.error()};
  }
  auto lock = platform::FileLock::Lock(path, 0600, wait, &cancelled);
  if (!lock) return Error{"cannot take the lock: " + lock.error()};
  if (!*lock) {
    return Error{cancelled.load() ? "shutting down"
                                  : fmt::format("another reconcile holds {}", path)};
  }
  return lock;
}

using RoleIndex = std::unordered_map<std::string, std::vector<LiveObject>>;

// Each role's live objects, from one pass over a list: reconcile stays linear in roles.
RoleIndex ByRole(const SourceSnapshot& snapshot) {
  RoleIndex index;
  for (const auto& object : snapshot.objects) index[std::string(object.role())].push_back(object);
  return index;
}

std::vector<std::string> RolesOf(const std::vector<const JobSpec*>& jobs) {
  std::vector<std::string> roles;
  roles.reserve(jobs.size());
  for (const JobSpec* job : jobs) roles.push_back(job->role);
  return roles;
}

const std::vector<LiveObject>& ObjectsOf(const RoleIndex& index, const std::string& role) {
  static const std::vector<LiveObject> kNone;
  auto it = index.find(role);
  return it == index.end() ? kNone : it->second;
}

std::int64_t SystemNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A template is a manifest or a cron.d file: small.
constexpr std::size_t kMaxTemplateBytes = 1u << 20;

Result<std::string> ReadTemplate(const std::string& path) {
  auto text = platform::ReadRegularFile(path, kMaxTemplateBytes);
  if (!text) return Error{"template: " + text.error()};
  return text;
}

struct SourceRun {
  const SourceSpec* spec = nullptr;
  std::vector<const JobSpec*> jobs;
  std::unique_ptr<Source> source;
  std::optional<Result<std::unique_ptr<Repairer>>> repairer;  // made when first needed
};

// The objects' own word for why they are not enabled ("backup.timer: masked"), or "".
std::string StatesOf(const std::vector<LiveObject>& objects) {
  std::string out;
  for (const auto& object : objects) {
    if (object.state().empty()) continue;
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", object.id(), object.state());
  }
  return out;
}

class Reconciler {
 public:
  Reconciler(const Spec& spec, const ReconcileOptions& options)
      : spec_(spec),
        options_(options),
        cancelled_(options.cancelled != nullptr ? *options.cancelled : never_cancelled_) {}

  ReconcileReport Run() {
    std::map<std::string, ReconcileRow> rows;
    for (const auto& [name, source_spec] : spec_.sources) {
      SourceRun run;
      run.spec = &source_spec;
      for (const auto& job : spec_.jobs) {
        if (job.source == name) run.jobs.push_back(&job);
      }
      if (run.jobs.empty()) continue;
      for (auto& row : ReconcileSource(run)) rows[row.role] = std::move(row);
    }
    ReconcileReport report;
    for (const auto& job : spec_.jobs) report.rows.push_back(rows[job.role]);
    report.lock_unavailable = lock_unavailable_;
    report.lock_taken = lock_taken_;
    if (options_.apply && !options_.ledger_file.empty() && !ledger_updates_.empty()) {
      // A ledger that cannot be read is left as it is (a person's typo is not overwritten).
      auto ledger = ReadLedger(options_.ledger_file);
      std::string problem = ledger ? "" : ledger.error();
      if (ledger) {
        for (auto& [role, entry] : ledger_updates_) ledger->entries[role] = entry;
        auto written = platform::EnsureStateDirectory(DirectoryOf(options_.ledger_file));
        if (written) written = WriteLedger(options_.ledger_file, *ledger);
        if (!written) problem = written.error();
      }
      if (!problem.empty()) {
        Log(LogLevel::kError, "ledger not written", {{"err", problem}});
        for (auto& row : report.rows) {
          if (ledger_updates_.count(row.role)) {
            row.action += " (ledger not written)";
            row.needs_person = true;
          }
        }
      }
    }
    return report;
  }

 private:
  Result<SourceSnapshot> List(Source& source) {
    ListContext context{Now(), &cancelled_};
    return source.List(context);
  }

  // Waits, or less when cancelled; false then.
  bool Wait(std::chrono::milliseconds duration) const {
    auto until = std::chrono::steady_clock::now() + duration;
    while (!cancelled_.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
    }
    return !cancelled_.load();
  }

  std::int64_t Now() const { return options_.clock ? options_.clock() : SystemNow(); }

  std::vector<ReconcileRow> ReconcileSource(SourceRun& run) {
    std::vector<ReconcileRow> rows;  // rows[i] is run.jobs[i]'s
    for (const JobSpec* job : run.jobs) rows.push_back({job->role, job->source, "", "", false});
    SourceOptions source_options{run.spec, run.jobs, {}};
    auto made =
        options_.make_source ? options_.make_source(source_options) : MakeSource(source_options);
    // Only an absence seen in two reads is `missing` (sources/absence.h).
    AbsenceReads reads = made ? ConfirmAbsence(
                                    RolesOf(run.jobs), [&] { return List(**made); },
                                    [&] { return Wait(options_.confirm_delay); })
                              : FirstRead({}, Error{made.error()});
    if (!reads.snapshot) {
      for (auto& row : rows) {
        row.condition = "unknown";
        row.action = "skipped: source unknown (" + reads.snapshot.error() + ")";
        row.needs_person = true;
      }
      return rows;
    }

    RoleIndex live = ByRole(*reads.snapshot);
    std::vector<std::size_t> to_create;
    std::unordered_set<std::size_t> to_finish;
    for (std::size_t i = 0; i < run.jobs.size(); ++i) {
      const JobSpec& job = *run.jobs[i];
      RoleObservation observation;
      observation.source_up = true;
      observation.objects = ObjectsOf(live, job.role);
      observation.absence_confirmed = reads.confirmed_absent.count(job.role) > 0;
      observation.desired_since = Now();
      RoleStatus status = Classify(job, observation, Now());
      ReconcileRow& row = rows[i];
      row.condition = status.ConditionList();
      row.needs_person = true;
      if (status.Has(Condition::kMissing)) {
        row.action = "missing";  // decided by Repair
        to_create.push_back(i);
      } else if (Repairer* repairer = job.template_path().empty() ? nullptr : RepairerOf(run);
                 repairer != nullptr && repairer->Unfinished(job)) {
        row.action = "unfinished";  // decided by Repair
        to_create.push_back(i);
        to_finish.insert(i);
      } else if (observation.objects.empty()) {
        row.action = "skipped: absent in one read only";
      } else if (status.Has(Condition::kDuplicate)) {
        row.action = "skipped: duplicate";
      } else if (status.Has(Condition::kInactive)) {
        row.action = "skipped: inactive, enable explicitly";
        if (auto states = StatesOf(observation.objects); !states.empty()) {
          row.action += " (" + states + ")";
        }
      } else if (status.Has(Condition::kDrift)) {
        row.action = "skipped: drift";
      } else {
        row.action = "verified";
        row.needs_person = false;
        Record(job, observation.objects.front().id());
      }
    }
    if (!to_create.empty()) Repair(run, **made, to_create, to_finish, rows);
    return rows;
  }

  // The source's repairer, made once; null when it has none.
  Repairer* RepairerOf(SourceRun& run) {
    if (!run.repairer) {
      run.repairer.emplace(options_.make_repairer ? options_.make_repairer(*run.spec)
                                                  : MakeRepairer(*run.spec));
    }
    return *run.repairer ? (*run.repairer)->get() : nullptr;
  }

  // Creates the jobs run.jobs[i] for i in `indices`, whose rows say `missing`, and finishes
  // the creations an earlier run left unfinished (`to_finish`).
  void Repair(SourceRun& run, Source& source, const std::vector<std::size_t>& indices,
              const std::unordered_set<std::size_t>& to_finish, std::vector<ReconcileRow>& rows) {
    RepairerOf(run);
    auto& repairer = *run.repairer;
    struct Ready {
      std::size_t index;
      std::string text;
      bool finish;
    };
    std::vector<Ready> ready;
    for (std::size_t i : indices) {
      const JobSpec& job = *run.jobs[i];
      ReconcileRow& row = rows[i];
      if (!repairer) {
        row.action = repairer.error();
        continue;
      }
      if (job.template_path().empty()) {
        row.action = "skipped: no template";
        continue;
      }
      auto text = ReadTemplate(job.template_path());
      if (!text) {
        row.action = "skipped: " + text.error();
        continue;
      }
      if (auto valid = (*repairer)->Validate(job, *text); !valid) {
        row.action = "skipped: template refused: " + valid.error();
        continue;
      }
      bool finish = to_finish.count(i) > 0;
      if (!options_.apply) {
        row.action = finish ? "would finish an interrupted creation" : "would create";
        continue;
      }
      ready.push_back({i, std::move(*text), finish});
    }
    if (ready.empty()) return;

    auto lock = AcquireLock(options_.lock_file, std::chrono::seconds(60), cancelled_);
    if (!lock) {
      for (const auto& item : ready) rows[item.index].action = "skipped: " + lock.error();
      if (!cancelled_.load()) lock_unavailable_ = true;
      return;
    }
    lock_taken_ = true;
    // Under the lock, one more read: whatever another reconciler or a person created since is
    // not created again.
    auto third = List(source);
    RoleIndex live = third ? ByRole(*third) : RoleIndex{};
    struct Pending {
      std::size_t index;
      Creation creation;
      bool finish;
    };
    std::vector<Pending> pending;
    for (const auto& item : ready) {
      const JobSpec& job = *run.jobs[item.index];
      ReconcileRow& row = rows[item.index];
      if (!third) {
        row.action = "skipped: source unknown on the last read (" + third.error() + ")";
        continue;
      }
      if (const auto& objects = ObjectsOf(live, job.role); !objects.empty() && !item.finish) {
        Settle(job, objects, "skipped: appeared before it was created", row);
        continue;
      }
      if (cancelled_.load()) {
        row.action = "skipped: shutting down";
        continue;
      }
      auto created = (*repairer)->Create(job, item.text);
      if (!created) {
        row.action = "create failed: " + created.error();
        continue;
      }
      if (!created->already_exists) {
        Log(LogLevel::kInfo, "created", {{"role", job.role}, {"what", created->what}});
      }
      pending.push_back({item.index, std::move(*created), item.finish});
    }
    if (pending.empty()) return;

    // Re-list until every new role shows. When a name was already taken (by someone else, or
    // by this very request when a lost answer made the HTTP client send it again), this tells
    // a good object from a stranger; nothing is ever overwritten.
    std::vector<std::string> roles;
    for (const auto& item : pending) roles.push_back(run.jobs[item.index]->role);
    std::string list_error;
    RoleIndex seen = AwaitRoles(source, roles, list_error);
    for (const auto& item : pending) {
      const JobSpec& job = *run.jobs[item.index];
      ReconcileRow& row = rows[item.index];
      const auto& objects = ObjectsOf(seen, job.role);
      bool taken = item.creation.already_exists;
      if (!objects.empty()) {
        Settle(job, objects,
               taken         ? "skipped: appeared before it was created"
               : item.finish ? "finished an interrupted creation"
                             : "created",
               row);
      } else if (taken) {
        row.action =
            fmt::format("skipped: {} exists but is not this role's job", item.creation.what);
        if (!list_error.empty()) row.action += " (the last list failed)";
      } else {
        row.action = "created, not verified: " +
                     (list_error.empty() ? "not seen in the live list" : list_error);
      }
    }
  }

  // Judges the role's objects seen after a creation, ours or someone else's: recorded when
  // there is one, enabled, as specified; a person's business otherwise.
  void Settle(const JobSpec& job, const std::vector<LiveObject>& objects, const std::string& what,
              ReconcileRow& row) {
    std::string problem;
    if (objects.size() > 1) {
      problem = "now duplicate: check by hand";
    } else if (Drifted(job, objects.front()) || !objects.front().enabled) {
      problem = "it differs from the spec: check by hand";
    }
    row.action = problem.empty() ? what : what + ", but " + problem;
    row.needs_person = !problem.empty();
    if (problem.empty()) Record(job, objects.front().id());
  }

  // Re-lists, a bounded number of times, until each role's object is seen; each list serves
  // every role. `list_error` is the last list's error, if it failed.
  RoleIndex AwaitRoles(Source& source, const std::vector<std::string>& roles,
                       std::string& list_error) {
    RoleIndex seen;
    for (int attempt = 0; attempt < options_.verify_attempts && seen.size() < roles.size();
         ++attempt) {
      if (attempt > 0 && !Wait(options_.verify_interval)) break;
      auto snapshot = List(source);
      list_error = snapshot ? "" : snapshot.error();
      if (!snapshot) continue;
      RoleIndex live = ByRole(*snapshot);
      for (const auto& role : roles) {
        if (auto it = live.find(role); it != live.end()) seen.emplace(role, it->second);
      }
    }
    return seen;
  }

  void Record(const JobSpec& job, std::string_view id) {
    ledger_updates_[job.role] = {job.source, std::string(id), FormatRfc3339(Now())};
  }

  const Spec& spec_;
  const ReconcileOptions& options_;
  std::atomic<bool> never_cancelled_{false};
  const std::atomic<bool>& cancelled_;
  std::map<std::string, LedgerEntry> ledger_updates_;
  bool lock_unavailable_ = false, lock_taken_ = false;
};

}  // namespace

int ReconcileReport::ExitCode() const {
  return std::any_of(rows.begin(), rows.end(), [](const auto& row) { return row.needs_person; })
             ? 1
             : 0;
}

std::string ReconcileReport::Render() const {
  std::size_t widths[3] = {4, 6, 9};
  for (const auto& row : rows) {
    widths[0] = std::max(widths[0], row.role.size());
    widths[1] = std::max(widths[1], row.source.size());
    widths[2] = std::max(widths[2], row.condition.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "ROLE", widths[0], "SOURCE",
                                widths[1], "CONDITION", widths[2], "ACTION");
  for (const auto& row : rows) {
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", row.role, widths[0], row.source, widths[1],
                       row.condition, widths[2], row.action);
  }
  return out;
}

std::string DefaultReconcileLockFile() {
  std::string directory = "/var/lib/schedwatch";
  if (const char* state = std::getenv("STATE_DIRECTORY"); state != nullptr && *state != '\0') {
    directory = state;
    directory = directory.substr(0, directory.find(':'));  // the first of several
  }
  return directory + "/reconcile.lock";
}

ReconcileReport Reconcile(const Spec& spec, const ReconcileOptions& options) {
  return Reconciler(spec, options).Run();
}

BackgroundReconciler::BackgroundReconciler(ReconcileOptions options)
    : options_(std::move(options)) {
  options_.cancelled = &cancelled_;
  thread_ = std::thread([this] { Loop(); });
}

BackgroundReconciler::~BackgroundReconciler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cancelled_ = true;
  wake_.notify_all();
  thread_.join();
}

void BackgroundReconciler::Submit(std::shared_ptr<const Spec> spec) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = std::move(spec);
  }
  wake_.notify_all();
}

void BackgroundReconciler::OnLockOutcome(std::function<void(bool)> listener) {
  // Held while a listener runs: once this returns, the listener replaced is never called again.
  std::lock_guard<std::mutex> calling(listener_mutex_);
  std::optional<bool> last;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = lock_unavailable_;
  }
  lock_listener_ = std::move(listener);
  if (last && lock_listener_) lock_listener_(*last);
}

void BackgroundReconciler::Loop() {
  for (;;) {
    std::shared_ptr<const Spec> spec;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || next_ != nullptr; });
      if (stopping_) return;
      spec = std::move(next_);
      next_ = nullptr;
    }
    ReconcileReport report = Reconcile(*spec, options_);
    if (report.lock_unavailable || report.lock_taken) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        lock_unavailable_ = report.lock_unavailable;
      }
      std::lock_guard<std::mutex> calling(listener_mutex_);
      if (lock_listener_) lock_listener_(report.lock_unavailable);
    }
    for (const auto& row : report.rows) {
      if (row.action == "verified") continue;
      Log(row.needs_person ? LogLevel::kWarn : LogLevel::kInfo, "reconcile",
          {{"role", row.role},
           {"source", row.source},
           {"condition", row.condition},
           {"action", row.action}});
    }
  }
}

}  // namespace schedwatch
