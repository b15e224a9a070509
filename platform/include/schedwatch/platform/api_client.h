// Requests to an HTTP API (Kubernetes, GitHub) with one retry policy: what is retried
// (transport failures that may pass, 429, 5xx, an answer the caller finds malformed), how long
// to wait (exponential backoff with a cap, or the server's Retry-After), and when to stop
// (attempts, one deadline, the caller's cancellation). Failures a retry got past are kept for the
// caller to count. The default headers (User-Agent, Accept, Authorization) are built here, and
// the bearer token is redacted from every message this returns.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/platform/clock.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/result.h"

namespace schedwatch::platform {

// Sends one request: HttpClient::Send in production, an in-process fake in unit tests.
using HttpTransport = std::function<Result<HttpResponse>(
    const HttpRequest& request, const std::atomic<bool>* cancelled, HttpFailure* failure)>;

// A transport over `client` (shared: the transport may outlive its creator's scope).
HttpTransport TransportOver(std::shared_ptr<HttpClient> client);

// A Retry-After value: delta-seconds or an HTTP-date (RFC 9110 section 10.2.3), as the wait
// from `now_unix`; nullopt when absent or unreadable. A date in the past is a wait of 0.
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view header, std::int64_t now_unix);

// The Unix time a server said to wait until (a Retry-After, a rate limit's reset), bounded to
// [now_unix, now_unix + max_wait]: no server's word blocks requests longer than the policy's
// max_retry_after, and no arithmetic on its number overflows. `capped` is set when it was cut.
std::int64_t BoundedRetryAt(std::int64_t asked_unix, std::int64_t now_unix,
                            std::chrono::seconds max_wait, bool* capped = nullptr);

// The rel="next" URL of a Link header (RFC 8288), or empty: how GitHub and GitLab page lists.
std::string NextLink(std::string_view link_header);

// A header holding a non-negative integer (x-ratelimit-remaining, ratelimit-remaining,
// x-next-page); nullopt when absent or not a number. `headers` keys are lower case.
std::optional<std::int64_t> IntegerHeader(const std::map<std::string, std::string>& headers,
                                          const std::string& name);

// "https://gitlab.example.com/api/v4" -> "https://gitlab.example.com"; empty without a scheme.
// A token goes only to its API's origin, and next-page links must stay on it.
std::string UrlOrigin(const std::string& url);

struct ApiHeaders {
  std::string product = "schedwatch";  // User-Agent: <product>/<version>
  std::string accept = "application/json";
  std::vector<std::pair<std::string, std::string>> extra;  // e.g. X-GitHub-Api-Version
};

// The headers every request of a client carries; Authorization only with a token.
std::vector<std::pair<std::string, std::string>> DefaultHeaders(const ApiHeaders& headers,
                                                                const std::string& bearer_token);

// Why a request was retried; the names are the `reason` of the problem it becomes.
enum class RetryCause { kTransport, kRateLimited, kServerError, kMalformed };
std::string_view RetryCauseName(RetryCause cause);  // transport_error, rate_limited, ...

struct RetryPolicy {
  int max_attempts = 3;
  std::chrono::milliseconds first_backoff{200};                     // doubled at each attempt...
  std::chrono::milliseconds max_backoff{std::chrono::seconds(10)};  // ...up to this
  bool retry_rate_limited = true;  // 429; false: the caller handles it (GitHub's quota)
  // A Retry-After on a 429 or 5xx is the wait (at most max_retry_after); a 429 without one
  // waits default_retry_after, a 5xx without one backs off.
  std::chrono::seconds default_retry_after{1};
  std::chrono::seconds max_retry_after{600};
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};  // each attempt
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
};

// A failure that a later attempt got past.
struct RecoveredFailure {
  RetryCause cause;
  std::string message;  // "GET /path: HTTP 503 ...; retrying", redacted
};

struct ApiCall {
  std::string method = "GET";
  std::string url;
  std::string accept;  // the Accept header; empty: the client's
  std::vector<std::pair<std::string, std::string>> headers;  // besides the default ones
  std::string body;
  std::size_t max_body_bytes = kHttpMaxBodyBytes;
  // A stream, as HttpRequest's; `check` then sees only what was kept (an error answer).
  std::function<bool(std::string_view data)> on_data;
  // Called before each attempt: a stream read by on_data starts again from its first byte.
  std::function<void()> on_attempt;
  std::chrono::milliseconds idle_timeout{0};
  // Words an HTTP error answer for messages, given its body already redacted ("HTTP 503
  // ServiceUnavailable: etcd"). Default: "HTTP <status>".
  std::function<std::string(const HttpResponse&)> describe;
  // Reads a 2xx answer; an Error (a malformed page) is retried as kMalformed. Default: accept.
  std::function<Result<bool>(const HttpResponse&)> check;
};

class ApiClient {
 public:
  ApiClient(HttpTransport transport, RetryPolicy policy, ApiHeaders headers = {},
            Clock& clock = RealClock());

  void SetToken(std::string token) { token_ = std::move(token); }
  const std::string& token() const { return token_; }
  // `text` without the token (also in its JSON-escaped form).
  std::string Redact(std::string text) const;
  Clock& clock() { return clock_; }
  const RetryPolicy& policy() const { return policy_; }

  // Sends `call` until an answer that is not retried comes (returned whatever its status: the
  // caller judges 404, 409 or 410), or fails: a transport failure retrying will not help
  // (TLS, too large, cancelled), attempts used up, a wait that would pass `deadline`, or
  // `cancelled` set (a backoff ends at once). Errors start with "<METHOD> <path>: ".
  Result<HttpResponse> Send(const ApiCall& call, Clock::TimePoint deadline,
                            const std::atomic<bool>* cancelled);

  // Failures that were recovered since the last Take; requests sent so far.
  std::vector<RecoveredFailure> TakeRecovered() { return std::exchange(recovered_, {}); }
  int requests() const { return requests_; }

 private:
  HttpTransport transport_;
  RetryPolicy policy_;
  ApiHeaders headers_;
  Clock& clock_;
  std::string token_;
  std::vector<RecoveredFailure> recovered_;
  int requests_ = 0;
};

}  // namespace schedwatch::platform
