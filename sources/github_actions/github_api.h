// The GitHub REST calls of the github_actions source: conditional requests, rate limits and
// error wording, over the platform's API client (headers, retries of transport failures and
// 5xx, redaction). The token is sent only to the API's own origin and never appears in
// messages.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/result.h"
#include "sources/request_counter.h"
#include "sources/source.h"

namespace schedwatch::github {

// The transport: HttpClient::Send in production, a fake in unit tests.
using HttpSend = platform::HttpTransport;

inline constexpr std::string_view kJsonMediaType = "application/vnd.github+json";
inline constexpr std::string_view kRawMediaType = "application/vnd.github.raw+json";
inline constexpr std::string_view kApiVersion = "2022-11-28";

struct RequestStats {
  int requests = 0;      // sent
  int not_modified = 0;  // of those, answered 304 (free of primary quota)
};

// An answer the caller interprets: 200, 304 (the caller's cached body stays valid) or 404.
struct ApiAnswer {
  long status = 0;
  std::string body;
  std::string etag;
  std::string next;  // the Link rel="next" URL, on the API's origin; empty on the last page
};

class Api {
 public:
  // `timeout` bounds each attempt; `clock` times the backoffs between attempts.
  Api(std::string base_url, std::chrono::milliseconds timeout, HttpSend send,
      platform::Clock& clock = platform::RealClock());

  const std::string& base_url() const { return base_url_; }
  void SetToken(std::string token) {
    token_ = token;
    client_.SetToken(std::move(token));
  }

  // GET `url` (absolute, on the API's origin); `etag` non-empty sends If-None-Match. Transport
  // failures and 5xx are retried (3 attempts); any other status than 200, 304 and 404 is an
  // Error naming the path and the reason. A rate-limit answer
  // (403/429 with x-ratelimit-remaining: 0, retry-after, or a rate-limit message) blocks every
  // request until it lifts; so does a response that leaves no primary quota.
  Result<ApiAnswer> Get(const std::string& url, const std::string& etag, std::string_view accept,
                        std::int64_t now, const std::atomic<bool>* cancelled);

  // Unix seconds before which no request is sent; nullopt when requests may go out.
  std::optional<std::int64_t> BlockedUntil(std::int64_t now) const;
  // "rate limited until 2026-11-30T12:00:00Z (no request sent)".
  std::string BlockedMessage(std::int64_t until) const;

  RequestStats& stats() { return stats_; }
  // Every attempt by outcome and the last x-ratelimit-remaining. Thread-safe.
  SourceRequestCounts Usage() const;
  // A reloaded source goes on counting where its predecessor stopped.
  void InheritUsage(const Api& previous);
  // x-ratelimit-limit of the last answer that had one: requests per hour of the primary limit.
  std::optional<std::int64_t> quota_limit() const { return limit_; }
  // Failures a retry got past since the last call.
  std::vector<platform::RecoveredFailure> TakeRecovered() { return client_.TakeRecovered(); }

 private:
  void NoteQuota(const HttpResponse& response, std::int64_t now);

  std::string base_url_;
  std::string origin_;  // scheme://host[:port] of base_url_
  std::chrono::milliseconds timeout_;
  RequestCounter counter_;  // before client_, whose transport it wraps
  platform::ApiClient client_;
  std::string token_;  // parts of it are redacted from what GitHub says
  std::optional<std::int64_t> remaining_, reset_, limit_;
  std::optional<std::int64_t> blocked_until_;
  std::int64_t secondary_backoff_;
  RequestStats stats_;
};

using platform::UrlOrigin;

}  // namespace schedwatch::github
