// The GitLab REST v4 calls of the gitlab source, over the platform's API client (one retry
// policy: transport failures, 5xx and 429 with their Retry-After; redaction of the token). The
// token goes only to the API's own origin, as `Authorization: Bearer`, and never into messages.
// RateLimit-Remaining 0 blocks every request until RateLimit-Reset.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "schedwatch/result.h"
#include "sources/request_counter.h"

namespace schedwatch::gitlab {

// An answer the caller interprets: a 2xx, or a 404 when the caller accepts it.
struct ApiAnswer {
  long status = 0;
  std::string body;
  std::string next;  // the next page's URL, on the API's origin; empty on the last page
};

class Api {
 public:
  // `timeout` bounds each attempt; `clock` times the backoffs between attempts.
  Api(std::string base_url, std::chrono::milliseconds timeout, platform::HttpTransport send,
      platform::Clock& clock = platform::RealClock());

  const std::string& base_url() const { return base_url_; }
  void SetToken(const std::string& token) {
    token_ = token;
    client_.SetToken(token);
    write_client_.SetToken(token);
  }

  // GET `url` (absolute, on the API's origin). A 404 is an answer when `accept_not_found`, else
  // an Error like every other status but 2xx, worded from GitLab's error body.
  Result<ApiAnswer> Get(const std::string& url, std::int64_t now,
                        const std::atomic<bool>* cancelled, bool accept_not_found = false);
  // POST a form (application/x-www-form-urlencoded) to `url`; a 2xx is success. Sent once:
  // a 5xx may have created the object all the same, which the caller's re-read tells.
  Result<ApiAnswer> PostForm(const std::string& url, const std::string& form, std::int64_t now,
                             const std::atomic<bool>* cancelled);

  // PUT a form to `url` (retried like a GET: the same PUT twice leaves the same object).
  Result<ApiAnswer> PutForm(const std::string& url, const std::string& form, std::int64_t now,
                            const std::atomic<bool>* cancelled);
  // Unix seconds before which no request is sent; nullopt when requests may go out.
  std::optional<std::int64_t> BlockedUntil(std::int64_t now) const;

  SourceRequestCounts Usage() const { return counter_.Usage(); }
  void InheritUsage(const Api& previous) { counter_.Inherit(previous.counter_); }
  // Failures a retry got past since the last call.
  std::vector<platform::RecoveredFailure> TakeRecovered() { return client_.TakeRecovered(); }
  int requests() const { return client_.requests() + write_client_.requests(); }

 private:
  static platform::ApiCall FormCall(const char* method, const std::string& url,
                                    const std::string& form);
  Result<ApiAnswer> Send(platform::ApiClient& client, platform::ApiCall call, std::int64_t now,
                         const std::atomic<bool>* cancelled, bool accept_not_found);
  std::string Explain(long status, const std::string& said) const;

  std::string base_url_;
  std::string origin_;
  std::chrono::milliseconds timeout_;
  RequestCounter counter_;  // before client_, whose transport it wraps
  platform::ApiClient client_;
  platform::ApiClient write_client_;  // one attempt: a retried POST may create two schedules
  std::optional<std::int64_t> blocked_until_;
  std::string token_;  // parts of it are redacted from what GitLab says
};

}  // namespace schedwatch::gitlab
