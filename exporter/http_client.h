// A small HTTP(S) client on libcurl for the sources that talk to an API (Kubernetes, GitHub).
// One connection is kept alive between requests. Headers may carry credentials: they are never
// logged, and errors name only the method, the URL's path and what went wrong.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

struct TlsOptions {
  std::string ca_file;  // PEM file of trusted CAs; empty: the system's
  std::string ca_pem;   // or PEM data
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;
  bool insecure_skip_verify = false;  // the caller warns; never the default
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case; the last value wins
  std::string body;

  std::string Header(const std::string& lower_case_name) const;
};

class HttpClient {
 public:
  explicit HttpClient(TlsOptions tls = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Transport failures (refused, timeout, TLS) are Errors; any HTTP status is a response.
  // `cancelled`, when set during the transfer, aborts it.
  Result<HttpResponse> Send(const HttpRequest& request,
                            const std::atomic<bool>* cancelled = nullptr);

  // Largest body accepted; a longer answer is an error, not an allocation.
  static constexpr std::size_t kMaxBodyBytes = 512u << 20;

 private:
  TlsOptions tls_;
  std::mutex mutex_;
  void* curl_;  // CURL*
};

// "https://host:6443/apis/batch/v1/cronjobs?limit=500" -> "/apis/batch/v1/cronjobs": for errors.
std::string UrlPathForMessages(const std::string& url);

}  // namespace schedwatch
