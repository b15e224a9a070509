// Paginated GETs of Kubernetes list endpoints: limit/continue, an expired continue token (410)
// restarts the list, 429 waits for Retry-After, 5xx, transport failures and malformed pages are
// retried; all bounded by attempts, restarts and one deadline, and cancellable between pages.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/platform/http_client.h"
#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch::kubernetes {

struct ListOptions {
  int page_size = 500;
  int max_attempts = 3;  // per page
  int max_restarts = 3;  // per list, for expired continue tokens
  std::chrono::milliseconds request_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds first_backoff{std::chrono::milliseconds(200)};
};

// A Retry-After header's delta seconds (the API server never sends the HTTP-date form); 1 s
// when missing or unreadable, at most 600 s.
std::chrono::seconds RetryAfter(const std::string& header);

class ApiLister {
 public:
  using Clock = std::chrono::steady_clock;
  // `token` may be empty (client certificates); it is sent, never reported.
  ApiLister(HttpClient& client, std::string server, std::string token, ListOptions options,
            Clock::time_point deadline, const std::atomic<bool>* cancelled);

  // Gets every page of `path` (`query` is extra, already encoded). `on_page` parses one page,
  // keeps its items and returns its continue token ("" on the last page); an Error from it
  // means the page was malformed and nothing was kept. `on_restart` forgets everything kept
  // since the list began. Any failure that is not recovered is an Error: never a partial list.
  using PageHandler = std::function<Result<std::string>(std::string_view body)>;
  Result<bool> List(const std::string& path, const std::string& query, const PageHandler& on_page,
                    const std::function<void()>& on_restart);

  // Failures that were recovered (retried, restarted): worth counting, not failing for.
  const std::vector<SourceProblem>& problems() const { return problems_; }
  int requests() const { return requests_; }

 private:
  Result<bool> Wait(Clock::duration duration);

  HttpClient& client_;
  std::string server_;
  std::string token_;
  ListOptions options_;
  Clock::time_point deadline_;
  const std::atomic<bool>* cancelled_;
  std::vector<SourceProblem> problems_;
  int requests_ = 0;
};

}  // namespace schedwatch::kubernetes
