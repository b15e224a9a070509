#include "exporter/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace schedwatch {
namespace {

struct Transfer {
  HttpResponse* response;
  const std::atomic<bool>* cancelled;
  bool too_large = false;
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::size_t bytes = size * count;
  if (transfer->response->body.size() + bytes > HttpClient::kMaxBodyBytes) {
    transfer->too_large = true;
    return 0;  // aborts the transfer
  }
  transfer->response->body.append(data, bytes);
  return bytes;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) transfer->response->headers.clear();  // after 100 Continue
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r\n") + 1);
    transfer->response->headers[name] = value;
  }
  return size * count;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  return transfer->cancelled != nullptr && transfer->cancelled->load() ? 1 : 0;
}

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

}  // namespace

std::string HttpResponse::Header(const std::string& lower_case_name) const {
  auto it = headers.find(lower_case_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string UrlPathForMessages(const std::string& url) {
  auto scheme = url.find("://");
  auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return "/";
  return url.substr(path, url.find('?', path) - path);
}

HttpClient::HttpClient(TlsOptions tls) : tls_(std::move(tls)) {
  static const bool initialised = (curl_global_init(CURL_GLOBAL_DEFAULT), true);
  (void)initialised;
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Result<HttpResponse> HttpClient::Send(const HttpRequest& request,
                                      const std::atomic<bool>* cancelled) {
  std::lock_guard<std::mutex> lock(mutex_);
  CURL* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return Error{"cannot initialise libcurl"};
  curl_easy_reset(curl);  // keeps the connection cache

  HttpResponse response;
  Transfer transfer{&response, cancelled};
  char error_buffer[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);

  if (!tls_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, tls_.ca_file.c_str());
  if (!tls_.ca_pem.empty()) SetBlob(curl, CURLOPT_CAINFO_BLOB, tls_.ca_pem);
  if (!tls_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, tls_.client_cert_file.c_str());
  }
  if (!tls_.client_key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, tls_.client_key_file.c_str());
  }
  if (!tls_.client_cert_pem.empty()) SetBlob(curl, CURLOPT_SSLCERT_BLOB, tls_.client_cert_pem);
  if (!tls_.client_key_pem.empty()) SetBlob(curl, CURLOPT_SSLKEY_BLOB, tls_.client_key_pem);
  if (tls_.insecure_skip_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (code != CURLE_OK) {
    std::string what = transfer.too_large
                           ? fmt::format("answer larger than {} MiB", kMaxBodyBytes >> 20)
                       : code == CURLE_ABORTED_BY_CALLBACK ? std::string("cancelled")
                       : error_buffer[0] != '\0'           ? std::string(error_buffer)
                                                           : curl_easy_strerror(code);
    return Error{fmt::format("{} {}: {}", request.method, UrlPathForMessages(request.url), what)};
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace schedwatch
