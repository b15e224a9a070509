// batch/v1 CronJob and Job lists as the API server returns them, mapped to what schedwatch
// compares: pure functions over JSON text, so fixtures test them without a server.
//
// A CronJob holds a role when it carries the label schedwatch.io/role; its spec version is the
// annotation schedwatch.io/spec-version. Run history comes from the CronJob's status
// (lastScheduleTime, lastSuccessfulTime, active) and from the Jobs whose ownerReferences name the
// CronJob's uid. A malformed item becomes a SourceProblem (malformed_object); the rest is used.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch::kubernetes {

inline constexpr const char* kRoleLabel = "schedwatch.io/role";
inline constexpr const char* kSpecVersionAnnotation = "schedwatch.io/spec-version";
// A CronJob without spec.timeZone runs in kube-controller-manager's zone, which is UTC unless
// the cluster's operators changed it; schedwatch reports it as UTC.
inline constexpr const char* kDefaultTimeZone = "UTC";

struct CronJob {
  std::string uid;
  LiveObject object;  // id "<namespace>/<name>"
  std::optional<std::int64_t> last_schedule;
  std::optional<std::int64_t> last_successful;
  std::vector<std::string> active_job_uids;
};

// Derived from the Job's conditions: Complete=True succeeded, Failed=True failed,
// Suspended=True suspended, anything else (unknown types included) still running.
enum class JobState { kRunning, kSucceeded, kFailed, kSuspended };

struct Job {
  std::size_t owner = 0;  // index of the owning CronJob
  std::string owner_uid;  // the owning CronJob's uid
  std::string uid;
  std::shared_ptr<const RunIdentity> name = nullptr;  // metadata.name: the run's id
  JobState state = JobState::kRunning;
  std::string reason;  // the deciding condition's reason as the API wrote it (BackoffLimitExceeded)
  std::int64_t started = 0;  // startTime, else creationTimestamp
  std::optional<std::int64_t> finished;
};

template <typename T>
struct Page {
  std::vector<T> items;
  std::string continue_token;           // "" on the last page
  std::string resource_version;         // the list's metadata.resourceVersion: a watch starts there
  std::vector<SourceProblem> problems;  // at most one per item
  std::size_t listed = 0;               // items on the page, readable or not, ours or not
};

// One object of a list page or a watch event as a cache keeps it: `key` is its uid (else its
// namespace/name, else its place), and it is ours (`value`), a problem, or neither (not ours:
// a CronJob without the role label, a Job no CronJob owns).
template <typename T>
struct Mapped {
  std::string key;
  std::optional<T> value;
  std::optional<SourceProblem> problem;
  std::string owner;  // a Job's owning CronJob's uid, also when the Job is a problem
};

// A watch event (one line of a watch stream): ADDED, MODIFIED, DELETED carry their object,
// BOOKMARK only a resourceVersion, ERROR a Status (410 Expired: list again).
enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };
template <typename T>
struct WatchEvent {
  EventType type = EventType::kError;
  std::string resource_version;  // the object's, or the bookmark's
  Mapped<T> object;
  long code = 0;  // ERROR: the Status's code, reason and message
  std::string reason, message;
};

// Every item of a list was a problem (`listed` items, `problems` of them): the list is no list
// to read, a failed read, never an empty one whose roles would look missing. Judged over all
// pages of a list, so that the page size does not change the verdict.
std::optional<std::string> NothingReadable(std::size_t listed,
                                           const std::vector<SourceProblem>& problems,
                                           const char* kind);
// The same from a count of unreadable items and the first one's problem.
std::optional<std::string> NothingReadable(std::size_t listed, std::size_t unreadable,
                                           const std::string& first_message, const char* kind);
// Problems a list keeps of its items (per reason, as ProblemSink): a page of 2 million
// unreadable one-byte items must not become 2 million messages. The rest are counted.
inline constexpr std::size_t kMaxListedItemProblems = 100;

// A CronJobList page: only CronJobs with the role label are returned. An Error means the page
// as a whole is unusable (not JSON, not a list, `items: null`). Items without a name are
// problems, ours or not.
Result<Page<CronJob>> ParseCronJobList(std::string_view body);

// A JobList page: only Jobs owned by one of `owners` (CronJob uid -> index) are returned.
Result<Page<Job>> ParseJobList(std::string_view body,
                               const std::unordered_map<std::string, std::size_t>& owners);

// A JobList page keeping every Job some CronJob owns (Job::owner_uid set, owner 0), as a cache
// that does not know yet which CronJobs will be ours does.
Result<Page<Job>> ParseOwnedJobList(std::string_view body);

// The same pages item by item, for a cache: `on_item` sees every item (ours or not).
Result<Page<CronJob>> ReadCronJobList(std::string_view body,
                                      const std::function<void(Mapped<CronJob>)>& on_item);
Result<Page<Job>> ReadOwnedJobList(std::string_view body,
                                   const std::function<void(Mapped<Job>)>& on_item);

// The page's own members, after its items: what a page gives besides them.
struct PageEnd {
  std::string continue_token;
  std::string resource_version;
  std::size_t listed = 0;  // items on the page, readable or not
};

// A list page read as it arrives, whatever the pieces it comes in: each item is mapped and
// handed to the stream's handler as soon as its text ends. Held meanwhile are the current
// item's text and the page's members other than items (kind, metadata), never the page:
// Read*List's results on the whole body, from a page's memory of one item.
class PageStream {
 public:
  struct Limits {
    // An item of a real cluster is at most etcd's 1.5 MiB request limit; a page's own members
    // are a few hundred bytes. Past either the page is a failed read.
    std::size_t max_item_bytes = 8u << 20;
    std::size_t max_rest_bytes = 1u << 20;
  };
  class Impl;
  explicit PageStream(std::unique_ptr<Impl> impl);
  PageStream(PageStream&&) noexcept;
  PageStream& operator=(PageStream&&) noexcept;
  ~PageStream();

  // The next bytes of the page. False once the page cannot be read (Finish says why): the
  // rest need not be fed.
  bool Feed(std::string_view data);
  // After the last byte: the page's continue token and resourceVersion, or an Error (not JSON,
  // not a list, `items: null`, truncated, too large) after which no item handed over counts.
  Result<PageEnd> Finish();
  // The page failed for passing a limit: the same answer again would fail again.
  bool over_limit() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Streams of a CronJobList page, of a JobList page keeping Jobs owned by `owners` (which must
// outlive the stream), and of one keeping every Job some CronJob owns: their handlers see the
// items Read*List would (every item, ours or not).
PageStream StreamCronJobList(std::function<void(Mapped<CronJob>)> on_item,
                             PageStream::Limits limits = {});
// The same keeping CronJobs without the role label too (their role empty), for discover.
PageStream StreamEveryCronJobList(std::function<void(Mapped<CronJob>)> on_item,
                                  PageStream::Limits limits = {});
PageStream StreamJobList(const std::unordered_map<std::string, std::size_t>& owners,
                         std::function<void(Mapped<Job>)> on_item, PageStream::Limits limits = {});
PageStream StreamOwnedJobList(std::function<void(Mapped<Job>)> on_item,
                              PageStream::Limits limits = {});

// One line of a watch of CronJobs / of Jobs (Jobs as ParseOwnedJobList keeps them). An Error:
// the line is no event (not JSON, no type, an unknown type, no object).
Result<WatchEvent<CronJob>> ParseCronJobEvent(std::string_view line);
Result<WatchEvent<Job>> ParseJobEvent(std::string_view line);

// Objects and per-role run history. An active Job the Job list did not show counts as running
// since the CronJob's lastScheduleTime (a late bound, so never a premature hung).
// `history_by_id`: by "<namespace>/<name>" instead (discover, where most have no role).
SourceSnapshot BuildSnapshot(const std::vector<CronJob>& cronjobs, const std::vector<Job>& jobs,
                             bool history_by_id = false);

// "HTTP 403 Forbidden: cronjobs.batch is forbidden: User ..." from an error answer, using the
// Status body's reason and message when there is one. A 403 says which `permission` to grant.
std::string DescribeApiError(
    long status, std::string_view body,
    std::string_view permission = "get, list and watch on cronjobs and jobs");

// The Status body's reason ("Expired"), or "" when the body is no Status.
std::string StatusReason(std::string_view body);

}  // namespace schedwatch::kubernetes
