// What one refresh saw: the input of every renderer (metrics, status page, JSON).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/counted.h"
#include "schedwatch/shard.h"
#include "schedwatch/spec.h"
#include "sources/source.h"

namespace schedwatch {

struct SourceStatus {
  std::string name;
  std::string type;
  bool up = false;
  std::string error;                      // why the last list failed; empty when up
  std::optional<std::int64_t> last_sync;  // end of the last successful list
  double sync_duration_seconds = 0;
  int objects = 0;
  int unowned_objects = 0;
  std::vector<SourceProblem> problems;          // of the last list
  std::optional<SourceRequestCounts> requests;  // sources that call a rate-limited API
  // Whether the last read got the run history too; false with `history_error` when the list was
  // read but not the history (its roles' runs are unknown), and false when the list failed.
  bool history_up = false;
  std::string history_error;
};

// Who reported a run: the role's source (its log, Jobs, workflow runs, snapshot) or, later, a
// run record of the job's own wrapper.
enum class RunOrigin : std::uint8_t { kSource, kRunner };

// One run as the exporter keeps it across refreshes (exporter/refresh/run_history.h): 16 bytes.
struct RecordedRun {
  std::int64_t started = 0;
  std::int32_t duration = -1;  // seconds; -1 while running
  Run::Outcome outcome = Run::Outcome::kRunning;
  RunOrigin origin = RunOrigin::kSource;

  std::optional<std::int64_t> finished() const {
    return duration < 0 ? std::nullopt : std::optional<std::int64_t>(started + duration);
  }
  bool operator==(const RecordedRun& other) const {
    return started == other.started && duration == other.duration && outcome == other.outcome &&
           origin == other.origin;
  }
};
using RoleRuns = std::vector<RecordedRun>;  // oldest first, at most kRunHistoryKept

// Finished runs counted since the exporter started, each once (exporter/refresh/run_history.h):
// schedwatch_job_runs_total.
struct RunCounts {
  std::uint32_t succeeded = 0;
  std::uint32_t failed = 0;
  bool empty() const { return succeeded == 0 && failed == 0; }
};

// Upper bounds (seconds) of schedwatch_job_run_duration_seconds' buckets; +Inf follows.
inline constexpr std::array<std::int32_t, 14> kRunDurationBuckets = {
    1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400};

// The bucket a duration is counted in: the first whose bound holds it, else +Inf's.
inline std::size_t DurationBucket(std::int64_t seconds) {
  std::size_t bucket = 0;
  while (bucket < kRunDurationBuckets.size() && seconds > kRunDurationBuckets[bucket]) ++bucket;
  return bucket;
}

// The durations of a role's counted runs, for jobs with duration_histogram.
struct DurationHistogram {
  std::array<std::uint32_t, kRunDurationBuckets.size() + 1> counts{};  // per bucket, not summed
  std::int64_t sum = 0;                                                // seconds

  void Observe(std::int64_t seconds) {
    ++counts[DurationBucket(seconds)];
    sum += seconds;
  }
};

// The newest counted run of one outcome that its scheduler named: an OpenMetrics exemplar on
// schedwatch_job_runs_total and on the duration histogram's bucket.
struct RunExemplar {
  std::shared_ptr<const RunIdentity> identity;
  std::int64_t finished = 0;  // the exemplar's timestamp
  std::int64_t duration = 0;  // seconds: the histogram exemplar's value
};
struct RunExemplars {
  std::optional<RunExemplar> failed, succeeded;
  // The newer of the two: the histogram's exemplar.
  const std::optional<RunExemplar>& newest() const {
    return !failed || (succeeded && succeeded->finished >= failed->finished) ? succeeded : failed;
  }
};
struct RoleExemplars {
  const JobSpec* job = nullptr;
  std::shared_ptr<const RunExemplars> exemplars;  // shared with the store
};

struct RoleDurations {
  const JobSpec* job = nullptr;
  std::shared_ptr<const DurationHistogram> histogram;  // shared with the store
};

// A role's live objects, read-only. Shared with the previous refresh while they are unchanged
// (the common case), so the published refresh and the one being built hold them once. One heap
// block holds the count, the references and the objects: a shared vector took two blocks, 96
// bytes of heap for one object, 64 now (1,000,000 roles: about 30 MiB less at the peak).
class RoleObjects {
 public:
  RoleObjects() = default;
  RoleObjects(std::vector<LiveObject> objects)  // NOLINT: a role's list, as observed
      : RoleObjects(objects.size(), [&objects](std::size_t i) { return std::move(objects[i]); }) {}
  // `count` objects, the i-th `make(i)`.
  template <typename Make>
  RoleObjects(std::size_t count, Make make) {
    if (count == 0) return;
    void* memory = ::operator new(sizeof(Block) + count * sizeof(LiveObject));
    Counted<Block> block(new (memory) Block);  // frees the objects made if `make` throws
    for (; block->size < count; ++block->size) {
      new (&block->objects()[block->size]) LiveObject(make(block->size));
    }
    block_ = std::move(block);
  }

  // The same list, not only an equal one (an unchanged list is shared).
  bool SameList(const RoleObjects& other) const { return block_.get() == other.block_.get(); }
  const LiveObject* begin() const { return block_ ? block_->objects() : nullptr; }
  const LiveObject* end() const { return begin() + size(); }
  bool empty() const { return size() == 0; }
  std::size_t size() const { return block_ ? block_->size : 0; }
  const LiveObject& operator[](std::size_t i) const { return begin()[i]; }

 private:
  // Followed by `size` objects.
  struct alignas(LiveObject) Block {
    std::atomic<std::uint32_t> references{1};
    std::uint32_t size = 0;
    LiveObject* objects() { return std::launder(reinterpret_cast<LiveObject*>(this + 1)); }
    static void Free(Block* block) {
      for (std::uint32_t i = 0; i < block->size; ++i) block->objects()[i].~LiveObject();
      block->~Block();
      ::operator delete(block);
    }
  };
  Counted<Block> block_;
};

// What schedwatch_run's records said of a role (jobs with runs_dir).
struct RunRecordFacts {
  std::optional<double> last_duration;
  std::optional<int> last_exit_code;  // 128 + N for a run ended by signal N, as shells say
  std::optional<bool> guarded;
  int run_records = 0;
  int skipped_duplicates = 0;  // among the records kept

  bool operator==(const RunRecordFacts& other) const {
    return last_duration == other.last_duration && last_exit_code == other.last_exit_code &&
           guarded == other.guarded && run_records == other.run_records &&
           skipped_duplicates == other.skipped_duplicates;
  }
};

// One role at one refresh. A refresh holds one per role, twice while the next is built: what
// few roles have is out of line.
struct RoleResult {
  const JobSpec* job = nullptr;
  RoleStatus status;
  RoleObjects objects;
  std::shared_ptr<const RoleRuns> runs;  // shared with the store and later refreshes; may be null
  // Set for jobs with runs_dir.
  std::shared_ptr<const RunRecordFacts> records;
  RunCounts run_counts;  // schedwatch_job_runs_total: served while `runs` is set or counts are

  const RunRecordFacts& Records() const {
    static const RunRecordFacts kNone;
    return records ? *records : kNone;
  }
  // Everything the renderers show is the same: the same job, objects and runs, an equal status.
  bool Unchanged(const RoleResult& before) const {
    return job == before.job && objects.SameList(before.objects) && runs == before.runs &&
           run_counts.succeeded == before.run_counts.succeeded &&
           run_counts.failed == before.run_counts.failed && status == before.status &&
           (records == before.records ||
            (records && before.records && *records == *before.records));
  }
};

// A spec's jobs in role order, found once per spec: a refresh puts its roles and runs in that
// order by number instead of comparing names (at 1,000,000 roles its sorts by name took about
// 2 s of each refresh's CPU).
class RoleOrder {
 public:
  RoleOrder() = default;
  explicit RoleOrder(const Spec& spec)
      : first_(spec.jobs.data()), jobs_(spec.jobs.size()), ranks_(spec.jobs.size()) {
    std::iota(jobs_.begin(), jobs_.end(), 0u);
    std::sort(jobs_.begin(), jobs_.end(), [&spec](std::uint32_t a, std::uint32_t b) {
      return spec.jobs[a].role < spec.jobs[b].role;
    });
    for (std::uint32_t i = 0; i < jobs_.size(); ++i) ranks_[jobs_[i]] = i;
  }
  // Indices into the spec's jobs, by role.
  const std::vector<std::uint32_t>& jobs() const { return jobs_; }
  // Where `job`, one of the spec's own, comes in role order.
  std::uint32_t Rank(const JobSpec& job) const {
    return ranks_[static_cast<std::size_t>(&job - first_)];
  }

 private:
  const JobSpec* first_ = nullptr;
  std::vector<std::uint32_t> jobs_;
  std::vector<std::uint32_t> ranks_;  // by index into the spec's jobs
};

// A refresh's roles. Each is held through a pointer so that a role unchanged since the published
// refresh is that refresh's object, not a copy: while a refresh is built, the published roles and
// the new ones are held once (100,000 roles: 18 MB less at the peak). Read-only but for Mutable.
class RoleList {
 public:
  // A role held by one refresh or more: it and its count of holders in one heap block of 184
  // bytes, 192 with malloc's header (make_shared's took 208: 16 MB more at 1,000,000 roles).
  class Item {
   public:
    Item() = default;
    explicit Item(RoleResult role) : node_(new Node(std::move(role))) {}
    RoleResult* get() const { return node_ ? &node_->role : nullptr; }
    RoleResult& operator*() const { return node_->role; }
    RoleResult* operator->() const { return &node_->role; }
    bool Shared() const { return node_.Shared(); }

   private:
    struct Node {
      explicit Node(RoleResult held) : role(std::move(held)) {}
      static void Free(Node* node) { delete node; }
      std::atomic<std::uint32_t> references{1};
      RoleResult role;
    };
    Counted<Node> node_;
  };
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = RoleResult;
    using difference_type = std::ptrdiff_t;
    using pointer = const RoleResult*;
    using reference = const RoleResult&;
    const_iterator() = default;
    explicit const_iterator(std::vector<Item>::const_iterator at) : at_(at) {}
    reference operator*() const { return **at_; }
    pointer operator->() const { return at_->get(); }
    reference operator[](difference_type n) const { return *at_[n]; }
    const_iterator& operator++() { return ++at_, *this; }
    const_iterator operator++(int) { return const_iterator(at_++); }
    const_iterator& operator--() { return --at_, *this; }
    const_iterator operator--(int) { return const_iterator(at_--); }
    const_iterator& operator+=(difference_type n) { return at_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return at_ -= n, *this; }
    const_iterator operator+(difference_type n) const { return const_iterator(at_ + n); }
    const_iterator operator-(difference_type n) const { return const_iterator(at_ - n); }
    difference_type operator-(const_iterator other) const { return at_ - other.at_; }
    bool operator==(const_iterator other) const { return at_ == other.at_; }
    bool operator!=(const_iterator other) const { return at_ != other.at_; }
    bool operator<(const_iterator other) const { return at_ < other.at_; }
    bool operator>(const_iterator other) const { return at_ > other.at_; }
    bool operator<=(const_iterator other) const { return at_ <= other.at_; }
    bool operator>=(const_iterator other) const { return at_ >= other.at_; }
    const Item& item() const { return *at_; }

   private:
    std::vector<Item>::const_iterator at_;
  };

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const RoleResult& operator[](std::size_t i) const { return *items_[i]; }
  const_iterator begin() const { return const_iterator(items_.begin()); }
  const_iterator end() const { return const_iterator(items_.end()); }
  void reserve(std::size_t n) { items_.reserve(n); }
  void push_back(RoleResult role) { items_.push_back(Item(std::move(role))); }
  void push_back(Item role) { items_.push_back(std::move(role)); }
  // For a refresh's maker that edits it (tests, tools): role `i`, copied first when shared.
  RoleResult& Mutable(std::size_t i) {
    if (items_[i].Shared()) items_[i] = Item(*items_[i]);
    return *items_[i];
  }
  void SortByRole() {
    std::sort(items_.begin(), items_.end(),
              [](const Item& a, const Item& b) { return a->job->role < b->job->role; });
  }
  // The same, for roles of `order`'s spec: when they are one per job (as a refresh observes
  // them) each is swapped into its place, in place; else sorted by rank. No name is compared.
  void SortByRole(const RoleOrder& order) {
    auto rank = [&order](const Item& item) { return order.Rank(*item->job); };
    bool one_per_job = items_.size() == order.jobs().size();
    for (std::size_t i = 0; one_per_job && i < items_.size(); ++i) {
      while (rank(items_[i]) != i) {
        Item& place = items_[rank(items_[i])];
        if (rank(place) == rank(items_[i])) {  // the same job twice
          one_per_job = false;
          break;
        }
        std::swap(items_[i], place);
      }
    }
    if (one_per_job) return;
    std::sort(items_.begin(), items_.end(),
              [&rank](const Item& a, const Item& b) { return rank(a) < rank(b); });
  }

 private:
  std::vector<Item> items_;
};

struct RefreshResult {
  std::shared_ptr<const Spec> spec;   // keeps every JobSpec* alive
  std::int64_t time = 0;              // the refresh's now
  bool complete = false;              // false before the first refresh has finished
  RoleList roles;                     // sorted by role
  std::vector<SourceStatus> sources;  // sorted by name
  // schedwatch_job_run_duration_seconds: roles of jobs with duration_histogram that counted a
  // run, sorted by role.
  std::vector<RoleDurations> durations;
  // Roles whose counted runs include one their scheduler named, sorted by role.
  std::vector<RoleExemplars> exemplars;
  // A step of the wall clock within the hold window (refresher.h): what held conditions.
  std::optional<ClockStep> clock_step;
  // Which shard this exporter is; `spec` holds its roles only, of spec_roles in the whole spec.
  ShardAssignment shard;
  std::size_t spec_roles = 0;
};

}  // namespace schedwatch
