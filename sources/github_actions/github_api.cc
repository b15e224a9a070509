#include "sources/github_actions/github_api.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/timefmt.h"
#include "sources/github_actions/github_mapping.h"
#include "sources/token.h"

namespace schedwatch::github {
namespace {

// GitHub asks to wait at least a minute after a secondary limit that names no retry-after, and
// longer each time it repeats.
constexpr std::int64_t kFirstSecondaryBackoff = 60;
constexpr std::int64_t kMaxSecondaryBackoff = 3600;
// The largest answers are pages of 100 workflows or 20 runs: well below this.
constexpr std::size_t kMaxAnswerBytes = 64u << 20;

platform::RetryPolicy RetryPolicy(std::chrono::milliseconds timeout) {
  platform::RetryPolicy policy;
  policy.max_attempts = 3;
  policy.first_backoff = std::chrono::seconds(1);
  policy.max_backoff = std::chrono::seconds(4);
  policy.retry_rate_limited = false;           // GitHub's limits block every request: see Get
  policy.max_retry_after = kMaxRateLimitWait;  // for a 5xx's Retry-After, and Get's blocks
  policy.request_timeout = timeout;
  return policy;
}

platform::ApiHeaders Headers() {
  platform::ApiHeaders headers;
  headers.extra = {{"X-GitHub-Api-Version", std::string(kApiVersion)}};
  return headers;
}

}  // namespace

SourceRequestCounts Api::Usage() const { return counter_.Usage(); }

void Api::InheritUsage(const Api& previous) {
  counter_.Inherit(previous.counter_);
  if (!limit_) limit_ = previous.limit_;
}

Api::Api(std::string base_url, std::chrono::milliseconds timeout, HttpSend send,
         platform::Clock& clock)
    : base_url_(std::move(base_url)),
      origin_(UrlOrigin(base_url_)),
      timeout_(timeout),
      counter_("x-ratelimit-remaining"),
      client_(counter_.Counting(std::move(send)), RetryPolicy(timeout), Headers(), clock),
      secondary_backoff_(kFirstSecondaryBackoff) {}

std::optional<std::int64_t> Api::BlockedUntil(std::int64_t now) const {
  std::optional<std::int64_t> until;
  if (blocked_until_ && *blocked_until_ > now) until = blocked_until_;
  if (remaining_ == 0 && reset_ && *reset_ > now) until = std::max(until.value_or(0), *reset_);
  return until;
}

std::string Api::BlockedMessage(std::int64_t until) const {
  return fmt::format("rate limited until {} (no request sent)", FormatRfc3339(until));
}

void Api::NoteQuota(const HttpResponse& response, std::int64_t now) {
  if (auto remaining = IntegerHeader(response.headers, "x-ratelimit-remaining")) {
    remaining_ = remaining;
  }
  if (auto limit = IntegerHeader(response.headers, "x-ratelimit-limit"); limit && *limit > 0) {
    limit_ = limit;
  }
  // Bounded when noted: a reset in 2058 would otherwise block every read until then.
  if (auto reset = IntegerHeader(response.headers, "x-ratelimit-reset")) {
    reset_ = platform::BoundedRetryAt(*reset, now, client_.policy().max_retry_after);
  }
}

Result<ApiAnswer> Api::Get(const std::string& url, const std::string& etag, std::string_view accept,
                           std::int64_t now, const std::atomic<bool>* cancelled) {
  std::string path = UrlPathForMessages(url);
  if (cancelled != nullptr && cancelled->load()) return Error{"cancelled"};
  if (UrlOrigin(url) != origin_) {
    return Error{fmt::format("GET {}: refusing a URL outside {}", path, origin_)};
  }
  if (auto until = BlockedUntil(now)) return Error{BlockedMessage(*until)};

  platform::ApiCall call;
  call.url = url;
  call.max_body_bytes = kMaxAnswerBytes;
  call.accept = accept;
  if (!etag.empty()) call.headers.emplace_back("If-None-Match", etag);
  call.describe = [&](const HttpResponse& response) {
    std::string message = ClassifyFailure(response.status, response.headers, response.body, now,
                                          secondary_backoff_, client_.policy().max_retry_after)
                              .message;
    message = RedactToken(message, token_);
    return fmt::format("HTTP {}{}", response.status, message.empty() ? "" : ": " + message);
  };
  int before = client_.requests();
  // Each attempt has the whole timeout; the backoffs between them come on top.
  auto deadline = client_.clock().Now() + timeout_ * client_.policy().max_attempts +
                  client_.policy().max_backoff * 2;
  auto response = client_.Send(call, deadline, cancelled);
  stats_.requests += client_.requests() - before;
  if (!response) return Error{response.error()};
  NoteQuota(*response, now);

  long status = response->status;
  if (status == 200 || status == 304 || status == 404) {
    if (status == 304) ++stats_.not_modified;
    if (status != 404) secondary_backoff_ = kFirstSecondaryBackoff;
    ApiAnswer answer{status, std::move(response->body), response->Header("etag"),
                     NextLink(response->Header("link"))};
    if (!answer.next.empty() && UrlOrigin(answer.next) != origin_) {
      return Error{fmt::format("GET {}: the next-page link leaves {}", path, origin_)};
    }
    return answer;
  }

  // Redacted before ClassifyFailure shortens GitHub's message: a cut token no longer matches.
  ApiFailure failure =
      ClassifyFailure(status, response->headers, client_.Redact(std::move(response->body)), now,
                      secondary_backoff_, client_.policy().max_retry_after);
  std::string detail = RedactToken(client_.Redact(failure.message), token_);
  std::string said = detail.empty() ? std::string() : ": " + detail;
  switch (failure.kind) {
    case ApiFailure::Kind::kRateLimited:
      blocked_until_ = std::max(blocked_until_.value_or(0), *failure.retry_at);
      if (failure.secondary) {
        secondary_backoff_ = std::min(secondary_backoff_ * 2, kMaxSecondaryBackoff);
      }
      return Error{fmt::format(
          "GET {}: rate limited until {} ({} {}{}{})", path, FormatRfc3339(*failure.retry_at),
          status, failure.secondary ? "secondary limit" : "primary limit exhausted",
          failure.capped ? fmt::format(", a longer wait asked for, capped at {}s",
                                       client_.policy().max_retry_after.count())
                         : "",
          said)};
    case ApiFailure::Kind::kUnauthorized:
      return Error{fmt::format("GET {}: 401 unauthorized{} (check the token)", path, said)};
    case ApiFailure::Kind::kForbidden:
      return Error{
          fmt::format("GET {}: 403 forbidden{} (check the token's permissions)", path, said)};
    default:
      return Error{fmt::format("GET {}: HTTP {}{}", path, status, said)};
  }
}

}  // namespace schedwatch::github
