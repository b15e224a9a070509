// A small HTTP(S) client on libcurl for the sources that talk to an API (Kubernetes, GitHub).
// One connection is kept alive between requests. Headers may carry credentials: they are never
// logged, errors name only the method, the URL's path and what went wrong, and a credential a
// server echoes back (a proxy's 401 page quoting the Authorization header) is redacted from the
// answer's body and headers before the caller sees it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

// Largest body accepted by default; a longer answer is an error, not an allocation.
inline constexpr std::size_t kHttpMaxBodyBytes = 512u << 20;

struct TlsOptions {
  // Trusted CAs: a PEM file or PEM data. When either is set it is the only trust anchor (the
  // system's CAs are not consulted); when both are empty, the system's CAs are used.
  std::string ca_file;
  std::string ca_pem;
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;
  bool insecure_skip_verify = false;  // the caller warns; never the default
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Connecting, TLS handshake included. Values below 1 ms count as 1 ms.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // the whole exchange
  std::size_t max_body_bytes = kHttpMaxBodyBytes;               // after decompression
  // A stream (a Kubernetes watch): when set, the body of a 2xx answer is handed over as it
  // arrives and not kept (max_body_bytes is then the caller's to enforce); returning false
  // ends the transfer, which then counts as complete. Other answers are kept as usual.
  std::function<bool(std::string_view data)> on_data;
  // No byte for this long ends the transfer as kTimeout (a stalled stream); 0: no limit.
  std::chrono::milliseconds idle_timeout{0};
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case; the last value wins
  std::string body;

  std::string Header(const std::string& lower_case_name) const;
};

// Why a request got no HTTP answer, for callers that decide whether to retry.
enum class HttpFailure {
  kNone,
  kConnect,    // refused, unreachable, name not resolved
  kTls,        // handshake or certificate verification failed: retrying will not help
  kTimeout,    // connect_timeout or timeout passed
  kCancelled,  // the caller's flag was set
  kTooLarge,   // the body passed max_body_bytes
  kOther,      // connection reset, empty reply, protocol error
};

class HttpClient {
 public:
  explicit HttpClient(TlsOptions tls = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Transport failures (refused, timeout, TLS) are Errors; any HTTP status is a response.
  // `cancelled`, when set during the transfer, aborts it within about 100 ms. `failure`, when
  // given, receives why there was no response (kNone on success).
  Result<HttpResponse> Send(const HttpRequest& request,
                            const std::atomic<bool>* cancelled = nullptr,
                            HttpFailure* failure = nullptr);

  static constexpr std::size_t kMaxBodyBytes = kHttpMaxBodyBytes;

 private:
  TlsOptions tls_;
  std::mutex mutex_;
  void* curl_;   // CURL*
  void* multi_;  // CURLM*: owns the kept-alive connection
};

// "https://host:6443/apis/batch/v1/cronjobs?limit=500" -> "/apis/batch/v1/cronjobs": for errors.
std::string UrlPathForMessages(const std::string& url);

// Replaces every occurrence of `secret` in `text` (also JSON-escaped, as `\/`) with
// "[redacted]". The one redaction of the exporter: run it on whole texts, before anything
// shortens them, since a cut secret no longer matches.
std::string RedactSecret(std::string text, std::string_view secret);

// Percent-encodes everything but unreserved characters, for query values and path segments.
std::string UrlEncode(std::string_view text);

}  // namespace schedwatch
