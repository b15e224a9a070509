#include "schedwatch/platform/api_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>

namespace schedwatch::platform {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

std::string Seconds(Clock::Duration duration) {
  return fmt::format("{:g}s", duration_cast<milliseconds>(duration).count() / 1000.0);
}

bool IsDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

HttpTransport TransportOver(std::shared_ptr<HttpClient> client) {
  return [client = std::move(client)](const HttpRequest& request,
                                      const std::atomic<bool>* cancelled, HttpFailure* failure) {
    return client->Send(request, cancelled, failure);
  };
}

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view header,
                                                    std::int64_t now_unix) {
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t'))
    header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  if (header.empty() || header.size() > 64) return std::nullopt;
  if (IsDigits(header)) {
    if (header.size() > 9) return std::chrono::seconds(999999999);  // "forever", capped later
    return std::chrono::seconds(std::stoll(std::string(header)));
  }
  // The three HTTP-date forms (IMF-fixdate, RFC 850, asctime): libcurl reads them all.
  time_t date = curl_getdate(std::string(header).c_str(), nullptr);
  if (date == -1) return std::nullopt;
  return std::chrono::seconds(
      std::max<std::int64_t>(0, static_cast<std::int64_t>(date) - now_unix));
}

std::int64_t BoundedRetryAt(std::int64_t asked_unix, std::int64_t now_unix,
                            std::chrono::seconds max_wait, bool* capped) {
  std::int64_t wait = std::max<std::int64_t>(0, max_wait.count());
  // Compared without asked - now, which overflows for a hostile asked near INT64_MAX.
  bool cut = asked_unix > now_unix && asked_unix - wait > now_unix;
  if (capped != nullptr) *capped = cut;
  if (cut) return now_unix + wait;
  return std::max(asked_unix, now_unix);
}

std::vector<std::pair<std::string, std::string>> DefaultHeaders(const ApiHeaders& headers,
                                                                const std::string& bearer_token) {
  std::vector<std::pair<std::string, std::string>> result = {
      {"Accept", headers.accept}, {"User-Agent", headers.product + "/" SCHEDWATCH_VERSION}};
  result.insert(result.end(), headers.extra.begin(), headers.extra.end());
  if (!bearer_token.empty()) result.emplace_back("Authorization", "Bearer " + bearer_token);
  return result;
}

std::string_view RetryCauseName(RetryCause cause) {
  switch (cause) {
    case RetryCause::kTransport:
      return "transport_error";
    case RetryCause::kRateLimited:
      return "rate_limited";
    case RetryCause::kServerError:
      return "server_error";
    case RetryCause::kMalformed:
      return "malformed_json";
  }
  return "transport_error";
}

ApiClient::ApiClient(HttpTransport transport, RetryPolicy policy, ApiHeaders headers, Clock& clock)
    : transport_(std::move(transport)),
      policy_(policy),
      headers_(std::move(headers)),
      clock_(clock) {}

std::string ApiClient::Redact(std::string text) const {
  return RedactSecret(std::move(text), token_);
}

Result<HttpResponse> ApiClient::Send(const ApiCall& call, Clock::TimePoint deadline,
                                     const std::atomic<bool>* cancelled) {
  const std::string where = call.method + " " + UrlPathForMessages(call.url);
  HttpRequest request;
  request.method = call.method;
  request.url = call.url;
  request.body = call.body;
  request.max_body_bytes = call.max_body_bytes;
  request.on_data = call.on_data;
  request.idle_timeout = call.idle_timeout;
  if (call.accept.empty()) {
    request.headers = DefaultHeaders(headers_, token_);
  } else {
    ApiHeaders headers = headers_;
    headers.accept = call.accept;
    request.headers = DefaultHeaders(headers, token_);
  }
  request.headers.insert(request.headers.end(), call.headers.begin(), call.headers.end());
  auto fail = [this](std::string message) { return Error{Redact(std::move(message))}; };

  for (int attempt = 1;; ++attempt) {
    if (cancelled != nullptr && cancelled->load()) return fail(where + ": cancelled");
    auto remaining = duration_cast<milliseconds>(deadline - clock_.Now());
    if (remaining <= milliseconds::zero()) return fail(where + ": no time left (deadline passed)");
    request.timeout = std::min(remaining, policy_.request_timeout);
    request.connect_timeout = std::min(request.timeout, policy_.connect_timeout);
    HttpFailure failure = HttpFailure::kNone;
    ++requests_;
    if (call.on_attempt) call.on_attempt();
    auto response = transport_(request, cancelled, &failure);

    RetryCause cause;
    std::string error;
    Clock::Duration wait = std::min<Clock::Duration>(
        policy_.first_backoff * (1LL << std::min(attempt - 1, 20)), policy_.max_backoff);
    if (!response) {
      if (failure == HttpFailure::kCancelled || failure == HttpFailure::kTls ||
          failure == HttpFailure::kTooLarge) {
        return fail(response.error());
      }
      cause = RetryCause::kTransport;
      error = response.error();
    } else if (response->status >= 200 && response->status < 300) {
      auto accepted = call.check ? call.check(*response) : Result<bool>(true);
      if (accepted) return response;
      cause = RetryCause::kMalformed;
      error = fmt::format("{}: {}", where, accepted.error());
    } else if ((response->status == 429 && policy_.retry_rate_limited) || response->status >= 500) {
      HttpResponse redacted = *response;
      redacted.body = Redact(std::move(redacted.body));
      error = fmt::format(
          "{}: {}", where,
          call.describe ? call.describe(redacted) : fmt::format("HTTP {}", response->status));
      cause = response->status == 429 ? RetryCause::kRateLimited : RetryCause::kServerError;
      // As client-go: a Retry-After on a 429 or a 5xx is the wait; a 429 without one waits
      // the default, a 5xx without one backs off.
      auto asked = ParseRetryAfter(response->Header("retry-after"), clock_.UnixSeconds());
      if (response->status == 429 && !asked) asked = policy_.default_retry_after;
      if (asked) {
        wait = std::min<Clock::Duration>(*asked, policy_.max_retry_after);
        if (clock_.Now() + wait >= deadline) {
          return fail(
              fmt::format("{} (Retry-After {} is beyond the timeout)", error, Seconds(wait)));
        }
      }
    } else {
      return response;  // the caller's to judge
    }

    if (attempt >= policy_.max_attempts) {
      return fail(fmt::format("{} (gave up after {} attempts)", error, attempt));
    }
    if (clock_.Now() + wait >= deadline) return fail(error + " (no time left to retry)");
    recovered_.push_back({cause, Redact(error + "; retrying")});
    if (!clock_.SleepFor(wait, cancelled)) return fail(where + ": cancelled");
  }
}

std::string NextLink(std::string_view header) {
  // <url>; rel="next", <url>; rel="last"
  while (!header.empty()) {
    std::size_t open = header.find('<');
    std::size_t close = header.find('>', open);
    if (open == std::string_view::npos || close == std::string_view::npos) return {};
    std::string_view url = header.substr(open + 1, close - open - 1);
    header.remove_prefix(close + 1);
    std::size_t end = header.find(',');
    std::string_view params = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    std::size_t rel = params.find("rel=");
    if (rel == std::string_view::npos) continue;
    std::string_view value = params.substr(rel + 4);
    if (!value.empty() && value.front() == '"') {
      value.remove_prefix(1);
      value = value.substr(0, value.find('"'));
    } else {
      value = value.substr(0, value.find(';'));
    }
    // rel may hold several space-separated relation types.
    while (!value.empty()) {
      std::size_t space = value.find(' ');
      if (value.substr(0, space) == "next") return std::string(url);
      if (space == std::string_view::npos) break;
      value.remove_prefix(space + 1);
    }
  }
  return {};
}

std::optional<std::int64_t> IntegerHeader(const std::map<std::string, std::string>& headers,
                                          const std::string& name) {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  const std::string& text = it->second;
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(text);
}

std::string UrlOrigin(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return {};
  return url.substr(0, url.find('/', scheme + 3));
}

}  // namespace schedwatch::platform
