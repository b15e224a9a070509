#include "sources/gitlab/gitlab_api.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/timefmt.h"
#include "sources/gitlab/gitlab_mapping.h"
#include "sources/token.h"

namespace schedwatch::gitlab {
namespace {

// A page of 100 schedules is a few hundred KiB.
constexpr std::size_t kMaxAnswerBytes = 16u << 20;
// GitLab's limits are per minute; a reset further away than an hour is the server's mistake.
constexpr std::chrono::seconds kMaxRateLimitWait{3600};

platform::RetryPolicy RetryPolicy(std::chrono::milliseconds timeout) {
  platform::RetryPolicy policy;
  policy.max_attempts = 3;
  policy.first_backoff = std::chrono::seconds(1);
  policy.max_backoff = std::chrono::seconds(4);
  policy.retry_rate_limited = true;  // 429 waits its Retry-After, if the read has the time
  policy.max_retry_after = kMaxRateLimitWait;
  policy.request_timeout = timeout;
  return policy;
}

platform::RetryPolicy WritePolicy(std::chrono::milliseconds timeout) {
  platform::RetryPolicy policy = RetryPolicy(timeout);
  policy.max_attempts = 1;
  return policy;
}

}  // namespace

Api::Api(std::string base_url, std::chrono::milliseconds timeout, platform::HttpTransport send,
         platform::Clock& clock)
    : base_url_(std::move(base_url)),
      origin_(platform::UrlOrigin(base_url_)),
      timeout_(timeout),
      counter_("ratelimit-remaining"),
      client_(counter_.Counting(send), RetryPolicy(timeout), {}, clock),
      write_client_(counter_.Counting(std::move(send)), WritePolicy(timeout), {}, clock) {}

std::optional<std::int64_t> Api::BlockedUntil(std::int64_t now) const {
  if (blocked_until_ && *blocked_until_ > now) return blocked_until_;
  return std::nullopt;
}

std::string Api::Explain(long status, const std::string& said) const {
  switch (status) {
    case 401:
      return "401 unauthorized" + said + " (check the token: expired, revoked or mistyped)";
    case 403:
      return "403 forbidden" + said +
             " (the token needs the read_api scope, and api to reconcile; its user needs at "
             "least the Reporter role, Developer to create schedules)";
    case 404:
      return "404 not found" + said +
             " (does the project exist, and can the token's user see it? GitLab answers 404 "
             "to a private project without access)";
    default:
      return fmt::format("HTTP {}{}", status, said);
  }
}

Result<ApiAnswer> Api::Get(const std::string& url, std::int64_t now,
                           const std::atomic<bool>* cancelled, bool accept_not_found) {
  platform::ApiCall call;
  call.url = url;
  return Send(client_, std::move(call), now, cancelled, accept_not_found);
}

Result<ApiAnswer> Api::PostForm(const std::string& url, const std::string& form, std::int64_t now,
                                const std::atomic<bool>* cancelled) {
  // Never retried: a POST whose answer was lost may have created the schedule.
  return Send(write_client_, FormCall("POST", url, form), now, cancelled, false);
}

Result<ApiAnswer> Api::PutForm(const std::string& url, const std::string& form, std::int64_t now,
                               const std::atomic<bool>* cancelled) {
  return Send(client_, FormCall("PUT", url, form), now, cancelled, false);
}

platform::ApiCall Api::FormCall(const char* method, const std::string& url,
                                const std::string& form) {
  platform::ApiCall call;
  call.method = method;
  call.url = url;
  call.body = form;
  call.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  return call;
}

Result<ApiAnswer> Api::Send(platform::ApiClient& client, platform::ApiCall call, std::int64_t now,
                            const std::atomic<bool>* cancelled, bool accept_not_found) {
  const std::string where = call.method + " " + UrlPathForMessages(call.url);
  if (cancelled != nullptr && cancelled->load()) return Error{where + ": cancelled"};
  if (platform::UrlOrigin(call.url) != origin_) {
    return Error{fmt::format("{}: refusing a URL outside {}", where, origin_)};
  }
  if (auto until = BlockedUntil(now)) {
    return Error{fmt::format("rate limited until {} (RateLimit-Remaining 0; no request sent)",
                             FormatRfc3339(*until))};
  }
  call.max_body_bytes = kMaxAnswerBytes;
  call.describe = [this](const HttpResponse& response) {
    std::string message = RedactToken(ErrorMessage(response.body), token_);
    return fmt::format("HTTP {}{}", response.status, message.empty() ? "" : ": " + message);
  };
  // Each attempt has the whole timeout; the backoffs between them come on top.
  auto deadline = client.clock().Now() + timeout_ * client.policy().max_attempts +
                  client.policy().max_backoff * 2;
  auto response = client.Send(call, deadline, cancelled);
  if (!response) return Error{response.error()};

  if (platform::IntegerHeader(response->headers, "ratelimit-remaining") == 0) {
    if (auto reset = platform::IntegerHeader(response->headers, "ratelimit-reset")) {
      blocked_until_ = platform::BoundedRetryAt(*reset, now, kMaxRateLimitWait);
    }
  }
  long status = response->status;
  if ((status >= 200 && status < 300) || (status == 404 && accept_not_found)) {
    ApiAnswer answer{status, std::move(response->body), {}};
    if (status < 300) answer.next = NextPageUrl(call.url, response->headers);
    if (!answer.next.empty() && platform::UrlOrigin(answer.next) != origin_) {
      return Error{fmt::format("{}: the next-page link leaves {}", where, origin_)};
    }
    return answer;
  }
  // Redacted before it is shortened, where a cut token would no longer match, then its pieces.
  std::string detail =
      RedactToken(client.Redact(ErrorMessage(client.Redact(std::move(response->body)))), token_);
  std::string said = detail.empty() ? std::string() : ": " + detail;
  return Error{fmt::format("{}: {}", where, Explain(status, said))};
}

}  // namespace schedwatch::gitlab
