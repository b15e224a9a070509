// Paginated GETs of Kubernetes list endpoints: limit/continue, and an expired continue token
// (410) restarts the list. Retries (429 with Retry-After, 5xx, transport failures, malformed
// pages), the deadline and cancellation are the API client's (platform/api_client.h); a list
// is bounded by restarts too.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "schedwatch/result.h"
#include "sources/kubernetes/kube_objects.h"
#include "sources/source.h"

namespace schedwatch::kubernetes {

struct ListOptions {
  int page_size = 500;
  int max_restarts = 3;  // per list, for expired continue tokens
  // Per answer: a page of 500 CronJobs is a few MiB; one larger than this fails the read
  // (never the process) before it fills the example Deployment's 256Mi.
  std::size_t max_answer_bytes = kDefaultMaxAnswerBytes;
  static constexpr std::size_t kDefaultMaxAnswerBytes = 64u << 20;
};

// How the Kubernetes API is retried: 3 attempts per request, from 200 ms doubling.
platform::RetryPolicy DefaultRetryPolicy();

class ApiLister {
 public:
  // `client` carries the token and the retry policy; `server` is "https://host:port".
  ApiLister(platform::ApiClient& client, std::string server, ListOptions options,
            platform::Clock::TimePoint deadline, const std::atomic<bool>* cancelled);

  // Gets every page of `path` (`query` is extra, already encoded), each read as it streams:
  // `start_page` gives a fresh stream for each attempt at a page (its items are the caller's to
  // hold aside), `on_page` takes the page once it was read whole and returns its continue token
  // ("" on the last page). A malformed page is retried; what a failed attempt's stream handed
  // over never counts. `on_restart` forgets everything kept since the list began. Any failure
  // that is not recovered is an Error: never a partial list.
  using PageStarter = std::function<PageStream()>;
  using PageHandler = std::function<std::string(const PageEnd& page)>;
  Result<bool> List(const std::string& path, const std::string& query,
                    const PageStarter& start_page, const PageHandler& on_page,
                    const std::function<void()>& on_restart);

  // Failures that were recovered (retried, restarted): worth counting, not failing for.
  const std::vector<SourceProblem>& problems() const { return problems_; }

 private:
  void TakeRecovered();

  platform::ApiClient& client_;
  std::string server_;
  ListOptions options_;
  platform::Clock::TimePoint deadline_;
  const std::atomic<bool>* cancelled_;
  std::vector<SourceProblem> problems_;
};

}  // namespace schedwatch::kubernetes
