// The one small interface every scheduler source implements, and the registry of source types.
// A source lists what its scheduler holds now; it never classifies. Adding a scheduler: a folder
// under sources/ with its descriptor and module, and one line in sources/source_types.def.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "schedwatch/shard.h"
#include "schedwatch/spec.h"

namespace schedwatch {

// Something wrong with one item of a list that did not stop the rest (a malformed object, a
// garbled log line), or a failure a retry got past. Counted in
// schedwatch_source_errors_total{reason} and shown on the status page.
struct SourceProblem {
  std::string reason;   // a short metric label value: "malformed_object", "unmatched_line"
  std::string message;  // for people; never holds a secret
  // A failed request that a retry got past (a 500, an expired continue token). The data
  // problems of a first read are seen again by the read that confirms an absence; these are
  // not, so they are counted from both.
  bool recovered = false;
  // Counted at an earlier refresh and still standing (a bad run record that is still there):
  // listed, so the problem stays visible while its cause does, but not counted again.
  bool counted_before = false;
};

// One complete read of one source.
struct SourceSnapshot {
  // Every object carrying the schedwatch marker, roles outside the spec included (unowned).
  std::vector<LiveObject> objects;
  std::map<std::string, RunHistory> history;     // by role
  std::map<std::string, std::int64_t> progress;  // by role, for sources that know it
  std::vector<SourceProblem> problems;
  // Set by a source whose `history` holds only what no snapshot the refresher used showed yet
  // (a log read as it grows): this read's number, counted up from 1. The refresher keeps what
  // earlier reads showed, and says which read it used (Source::Used). 0: `history` is what the
  // scheduler shows now, whole.
  std::uint64_t news_read = 0;
  // Set when `objects` is the whole live list but the run history could not be read (cron's log
  // absent, a Jobs or runs endpoint failing): why, for people, without secrets. `history` and
  // `progress` are then empty: the roles' existence is judged from `objects`, their runs are
  // unknown (never `missing`, `not_started` or `stale`).
  std::string history_error;
};

struct ListContext {
  std::int64_t now = 0;  // Unix seconds, taken once per refresh
  // Set when the refresh gave up waiting; long reads should check it and return early.
  const std::atomic<bool>* cancelled = nullptr;
};

// What a source that calls an API has spent of it, since the source was made (counts carry over
// a reload with its caches). Exported as schedwatch_source_requests_total{outcome} and
// schedwatch_source_rate_limit_remaining.
struct SourceRequestCounts {
  // By outcome: the HTTP status ("200", "304", "404", "403", "429", "5xx", "other") or "error"
  // when no answer came (connection, TLS, timeout). Every attempt counts, retries included.
  std::map<std::string, std::uint64_t> by_outcome;
  std::optional<std::int64_t> rate_limit_remaining;  // the last answer's, when it said
  std::optional<std::int64_t> read_floor_seconds;    // the interval between real reads in force
};

class Source {
 public:
  virtual ~Source() = default;
  // Reads the scheduler's live list and run history. An Error means the list could not be
  // read as a whole: its roles become unknown, never missing. A list read without its history
  // is a snapshot with history_error set. Called from one thread at a time.
  virtual Result<SourceSnapshot> List(const ListContext& context) = 0;
  // On a spec reload, the same-named source of the previous spec (which is read no more) hands
  // over what saves work or cannot be read again: HTTP validators and cached answers, a log's
  // read position and the runs it showed. Never conclusions from the old spec's jobs. By
  // default nothing is kept.
  virtual void InheritCaches(Source& previous) { (void)previous; }
  // For sources that set SourceSnapshot::news_read: the refresher used the snapshot of read
  // `news_read` and keeps from it the runs of `kept_roles` (sorted), which need not be shown
  // again; other roles' must, as a reloaded spec may add them. Called after that read returned,
  // before the next one starts.
  virtual void Used(std::uint64_t news_read, const std::vector<std::string>& kept_roles) {
    (void)news_read, (void)kept_roles;
  }
  // For sources that call a rate-limited API; nullopt for the others. Thread-safe: called while
  // a read may be running.
  virtual std::optional<SourceRequestCounts> RequestCounts() const { return std::nullopt; }
};

// Everything a source may need besides its spec block: the jobs it serves.
struct SourceOptions {
  const SourceSpec* spec = nullptr;
  std::vector<const JobSpec*> jobs;
  // The exporter's shard: the refresher drops what other shards count from every read; a source
  // may skip it sooner (ShardAssignment::Owns of an object's role).
  ShardAssignment shard;
};

using SourceFactory = std::function<Result<std::unique_ptr<Source>>(const SourceOptions&)>;

Result<std::unique_ptr<Source>> MakeSource(const SourceOptions& options);

}  // namespace schedwatch
