#include "sources/kubernetes/kube_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "sources/kubernetes/kube_objects.h"

namespace schedwatch::kubernetes {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr std::chrono::seconds kDefaultRetryAfter{1};
constexpr std::chrono::seconds kMaxRetryAfter{600};
constexpr milliseconds kWaitSlice{50};

std::string Seconds(ApiLister::Clock::duration duration) {
  return fmt::format("{:g}s", duration_cast<milliseconds>(duration).count() / 1000.0);
}

}  // namespace

std::chrono::seconds RetryAfter(const std::string& header) {
  if (header.empty() || header.size() > 6 ||
      !std::all_of(header.begin(), header.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return kDefaultRetryAfter;
  }
  return std::min(std::chrono::seconds(std::stoi(header)), kMaxRetryAfter);
}

ApiLister::ApiLister(HttpClient& client, std::string server, std::string token, ListOptions options,
                     Clock::time_point deadline, const std::atomic<bool>* cancelled)
    : client_(client),
      server_(std::move(server)),
      token_(std::move(token)),
      options_(options),
      deadline_(deadline),
      cancelled_(cancelled) {}

Result<bool> ApiLister::Wait(Clock::duration duration) {
  auto until = Clock::now() + duration;
  while (Clock::now() < until) {
    if (cancelled_ != nullptr && cancelled_->load()) return Error{"cancelled"};
    std::this_thread::sleep_for(std::min<Clock::duration>(kWaitSlice, until - Clock::now()));
  }
  return true;
}

Result<bool> ApiLister::List(const std::string& path, const std::string& query,
                             const PageHandler& on_page, const std::function<void()>& on_restart) {
  HttpRequest request;
  request.headers = {{"Accept", "application/json"},
                     {"User-Agent", "schedwatch/" SCHEDWATCH_VERSION}};
  if (!token_.empty()) request.headers.emplace_back("Authorization", "Bearer " + token_);
  const std::string where = "GET " + path;
  std::string continue_token;
  int restarts = 0, pages = 0;
  for (;;) {
    request.url = fmt::format("{}{}?limit={}", server_, path, options_.page_size);
    if (!query.empty()) request.url += "&" + query;
    if (!continue_token.empty()) request.url += "&continue=" + UrlEncode(continue_token);
    for (int attempt = 1;; ++attempt) {
      if (cancelled_ != nullptr && cancelled_->load()) return Error{where + ": cancelled"};
      auto remaining = deadline_ - Clock::now();
      if (remaining <= Clock::duration::zero()) {
        return Error{
            fmt::format("{}: no complete list within the timeout ({} pages read)", where, pages)};
      }
      request.timeout = std::min(duration_cast<milliseconds>(remaining), options_.request_timeout);
      request.connect_timeout = std::min(request.timeout, options_.connect_timeout);
      HttpFailure failure;
      ++requests_;
      auto response = client_.Send(request, cancelled_, &failure);

      std::string reason, error;
      Clock::duration wait = options_.first_backoff * (1 << std::min(attempt - 1, 6));
      if (!response) {
        if (failure == HttpFailure::kCancelled || failure == HttpFailure::kTls ||
            failure == HttpFailure::kTooLarge) {
          return Error{response.error()};
        }
        reason = "transport_error";
        error = response.error();
      } else if (response->status == 200) {
        auto next = on_page(response->body);
        if (next) {
          continue_token = *next;
          ++pages;
          break;
        }
        reason = "malformed_json";
        error = fmt::format("{}: {}", where, next.error());
      } else if (response->status == 410 && !continue_token.empty() &&
                 StatusReason(response->body) == "Expired") {
        if (++restarts > options_.max_restarts) {
          return Error{
              fmt::format("{}: the continue token expired {} times; the list never completed",
                          where, restarts)};
        }
        problems_.push_back({"list_restarted",
                             fmt::format("{}: the continue token expired after {} pages; "
                                         "listing again from the start",
                                         where, pages),
                             /*recovered=*/true});
        on_restart();
        continue_token.clear();
        pages = 0;
        break;
      } else if (response->status == 429 || response->status >= 500) {
        reason = response->status == 429 ? "rate_limited" : "server_error";
        error =
            fmt::format("{}: {}", where,
                        DescribeApiError(response->status, RedactSecret(response->body, token_)));
        if (response->status == 429) {
          wait = RetryAfter(response->Header("retry-after"));
          if (Clock::now() + wait >= deadline_) {
            return Error{
                fmt::format("{} (Retry-After {} is beyond the timeout)", error, Seconds(wait))};
          }
        }
      } else {
        return Error{
            fmt::format("{}: {}", where,
                        DescribeApiError(response->status, RedactSecret(response->body, token_)))};
      }

      if (attempt >= options_.max_attempts) {
        return Error{fmt::format("{} (gave up after {} attempts)", error, attempt)};
      }
      if (Clock::now() + wait >= deadline_) {
        return Error{fmt::format("{} (no time left to retry)", error)};
      }
      problems_.push_back({reason, error + "; retrying", /*recovered=*/true});
      if (auto waited = Wait(wait); !waited) return Error{where + ": " + waited.error()};
    }
    if (continue_token.empty() && pages > 0) return true;
  }
}

}  // namespace schedwatch::kubernetes
