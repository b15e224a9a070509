// A cache of one resource (CronJobs or Jobs) in one scope, kept by a list and then a watch, as
// client-go's informers keep theirs. The refresh lists (Sync) when the cache is not synced;
// a thread of the cache's own then watches from the list's resourceVersion with bookmarks and
// applies each event. The watch is restarted when the server ends it (from the last
// resourceVersion seen, without a list) and when it brings nothing for `stalled_after`; a 410
// (an HTTP status or an ERROR event), any other failure or a line that is no event un-syncs
// the cache, so that the next refresh lists again, and fails as a whole while it cannot.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "sources/kubernetes/kube_api.h"
#include "sources/kubernetes/kube_objects.h"

namespace schedwatch::kubernetes {

// How a watch reaches the API server: what the source's last read used.
struct Connection {
  std::string server;  // "https://host:port"
  TlsOptions tls;
  std::string token;
  std::uint64_t version = 0;  // changes with the server or TLS settings: a new transport
};

struct WatchTuning {
  // timeoutSeconds of each watch: the server ends it then, and it is started again.
  std::chrono::seconds timeout{300};
  // The API server sends a bookmark about every minute: three without one is a stalled watch.
  std::chrono::milliseconds stalled_after{std::chrono::minutes(3)};
  // A watch that ends at once with nothing is started again after this, doubling to a minute.
  std::chrono::milliseconds quick_end_backoff{std::chrono::seconds(1)};
};

// Requests and outcomes of one cache's watches, for tests and benchmarks.
struct WatchCounts {
  int watches = 0;          // watch requests sent
  int ended = 0;            // ended by the server (timeoutSeconds, a closed connection): resumed
  int stalled = 0;          // nothing for stalled_after: restarted
  int expired = 0;          // 410: listed again
  int failed = 0;           // any other failure: listed again
  std::uint64_t bytes = 0;  // watch stream bytes received
};

template <typename T>
class Informer {
 public:
  using TransportFactory = std::function<platform::HttpTransport(const TlsOptions& tls)>;

  // `path` is the list path ("/apis/batch/v1/namespaces/ops/jobs"), `query` extra (encoded).
  Informer(std::string path, std::string query, std::function<Connection()> connection,
           TransportFactory transport, platform::Clock& clock, WatchTuning tuning);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before the first Sync: the cache holds only the objects `keep` holds for (a shard's), as
  // kube-state-metrics' shards filter what they watch; the others are dropped as they come.
  void KeepOnly(std::function<bool(const T&)> keep) { keep_ = std::move(keep); }

  // Lists into the cache unless it is synced, then (the first time) starts the watch thread.
  // An Error leaves the cache unsynced: the read that asked fails as a whole.
  Result<bool> Sync(ApiLister& lister);
  bool synced() const;
  // Why the cache was last un-synced ("" if never).
  std::string last_failure() const;
  // Un-syncs the cache: the next Sync lists again (a shard's Job cache dropped the Jobs of a
  // CronJob that is now the shard's). The watch of the old list ends at its next event.
  void Relist(std::string why);
  // Objects the cache holds.
  std::size_t size() const;

  // The cached objects, and the problems of those that could not be read (of a Job: only when
  // `ours` holds for its owner's uid, "" when it has none).
  void CopyTo(std::vector<T>& items, std::vector<SourceProblem>& problems,
              const std::function<bool(const std::string& owner)>& ours = nullptr) const;
  WatchCounts counts() const;

  // Ends the watch (within the transport's cancellation poll) and joins its thread.
  void Stop();

 private:
  void Run();
  // Applies one stream line under the lock; false ends the stream (`outcome` says why).
  enum class Outcome { kGoing, kExpired, kBroken };
  Outcome Handle(std::string_view line, std::uint64_t generation, std::string& error);
  void Unsync(std::uint64_t generation, std::string why);

  bool Kept(const T& object) const { return !keep_ || keep_(object); }

  const std::string path_, query_;
  std::function<bool(const T&)> keep_;  // set before the watch thread starts, then read-only
  std::function<Connection()> connection_;
  TransportFactory transport_;
  platform::Clock& clock_;
  WatchTuning tuning_;

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  std::unordered_map<std::string, T> objects_;  // by key (uid)
  struct Unreadable {
    std::string owner;
    SourceProblem problem;
  };
  std::unordered_map<std::string, Unreadable> problems_;  // by key
  std::size_t unlisted_problems_ = 0;  // past kMaxListedItemProblems at the last list
  std::string resource_version_;
  bool synced_ = false;
  std::uint64_t generation_ = 0;  // one per list: events of an older watch are not applied
  std::string last_failure_;
  WatchCounts counts_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

extern template class Informer<CronJob>;
extern template class Informer<Job>;

}  // namespace schedwatch::kubernetes
