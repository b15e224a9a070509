#include "schedwatch/platform/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "schedwatch/platform/file.h"

namespace schedwatch {
namespace {

// CA bundles and client certificates: the system bundle is about 200 KiB.
constexpr std::size_t kMaxPemBytes = 4u << 20;

// How often a transfer wakes up to look at the caller's cancellation flag.
constexpr int kCancelPollMilliseconds = 100;

struct Transfer {
  HttpResponse* response;
  std::size_t max_body_bytes;
  const HttpRequest* request;
  void* curl;
  std::chrono::steady_clock::time_point last_data;
  bool too_large = false;
  bool ended_by_caller = false;
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::size_t bytes = size * count;
  transfer->last_data = std::chrono::steady_clock::now();
  if (transfer->request->on_data) {
    long status = 0;
    curl_easy_getinfo(static_cast<CURL*>(transfer->curl), CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      if (transfer->request->on_data(std::string_view(data, bytes))) return bytes;
      transfer->ended_by_caller = true;
      return 0;  // ends the transfer
    }
  }
  if (transfer->response->body.size() + bytes > transfer->max_body_bytes) {
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

void SetBlob(CURL* curl, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(curl, option, &blob);
}

long Milliseconds(std::chrono::milliseconds duration) {
  return static_cast<long>(std::max<std::chrono::milliseconds::rep>(duration.count(), 1));
}

HttpFailure Classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return HttpFailure::kNone;
    case CURLE_OPERATION_TIMEDOUT:
      return HttpFailure::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return HttpFailure::kConnect;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
      return HttpFailure::kTls;
    default:
      return HttpFailure::kOther;
  }
}

// Shorter credentials would match ordinary words of an answer and corrupt it; they are not
// searched for in bodies (callers still redact them from their own messages).
constexpr std::size_t kMinRedactedInBody = 8;

// The credentials a request carries: the values of its authorization headers, and the part
// after the scheme ("Bearer <token>" -> "<token>").
std::vector<std::string> Credentials(const HttpRequest& request) {
  std::vector<std::string> secrets;
  for (const auto& [name, value] : request.headers) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower != "authorization" && lower != "proxy-authorization" && lower != "cookie") continue;
    auto space = value.find(' ');
    std::string credential = space == std::string::npos ? value : value.substr(space + 1);
    if (credential.size() >= kMinRedactedInBody) secrets.push_back(credential);
  }
  return secrets;
}

}  // namespace

std::string RedactSecret(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  constexpr std::string_view kRedacted = "[redacted]";
  auto replace_all = [&text, kRedacted](std::string_view needle) {
    for (auto at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + kRedacted.size())) {
      text.replace(at, needle.size(), kRedacted);
    }
  };
  replace_all(secret);
  if (secret.find('/') != std::string_view::npos) {  // JSON may write "/" as "\/"
    std::string escaped;
    for (char c : secret) escaped += c == '/' ? std::string("\\/") : std::string(1, c);
    replace_all(escaped);
  }
  return text;
}

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

std::string UrlEncode(std::string_view text) {
  // Since libcurl 7.82 the handle argument is ignored.
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (escaped == nullptr) return {};
  std::string result(escaped);
  curl_free(escaped);
  return result;
}

HttpClient::HttpClient(TlsOptions tls) : tls_(std::move(tls)) {
  static const bool initialised = (curl_global_init(CURL_GLOBAL_DEFAULT), true);
  (void)initialised;
  curl_ = curl_easy_init();
  multi_ = curl_multi_init();
}

HttpClient::~HttpClient() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

Result<HttpResponse> HttpClient::Send(const HttpRequest& request,
                                      const std::atomic<bool>* cancelled, HttpFailure* failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  HttpFailure ignored;
  HttpFailure& why = failure != nullptr ? *failure : ignored;
  why = HttpFailure::kOther;
  CURL* curl = static_cast<CURL*>(curl_);
  CURLM* multi = static_cast<CURLM*>(multi_);
  if (curl == nullptr || multi == nullptr) return Error{"cannot initialise libcurl"};
  auto fail = [&request](const std::string& what) {
    return Error{fmt::format("{} {}: {}", request.method, UrlPathForMessages(request.url), what)};
  };
  if (cancelled != nullptr && cancelled->load()) {
    why = HttpFailure::kCancelled;
    return fail("cancelled");
  }
  curl_easy_reset(curl);  // the connection stays in the multi handle's pool

  HttpResponse response;
  Transfer transfer{&response, request.max_body_bytes, &request, curl,
                    std::chrono::steady_clock::now()};
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
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, Milliseconds(request.connect_timeout));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, Milliseconds(request.timeout));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);

  // Files are read here, capped and only when regular (libcurl would block on a FIFO), and
  // handed over as PEM: read at every request, so rotated certificates are picked up.
  std::string ca_pem = tls_.ca_pem, cert_pem = tls_.client_cert_pem, key_pem = tls_.client_key_pem;
  for (auto [file, pem] :
       {std::pair{&tls_.ca_file, &ca_pem}, std::pair{&tls_.client_cert_file, &cert_pem},
        std::pair{&tls_.client_key_file, &key_pem}}) {
    if (file->empty()) continue;
    auto text = platform::ReadRegularFile(*file, kMaxPemBytes);
    if (!text) {
      curl_slist_free_all(headers);
      why = HttpFailure::kTls;  // retrying will not help
      return fail(text.error());
    }
    *pem = std::move(*text);
  }
  if (!ca_pem.empty()) {
    // The given CAs only: a certificate from some public CA must not vouch for a cluster.
    curl_easy_setopt(curl, CURLOPT_CAPATH, nullptr);
    SetBlob(curl, CURLOPT_CAINFO_BLOB, ca_pem);
  }
  if (!cert_pem.empty()) SetBlob(curl, CURLOPT_SSLCERT_BLOB, cert_pem);
  if (!key_pem.empty()) SetBlob(curl, CURLOPT_SSLKEY_BLOB, key_pem);
  if (tls_.insecure_skip_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  // The multi interface, so that a cancellation is noticed between short polls.
  CURLcode code = CURLE_OK;
  bool aborted = false, idle = false;
  curl_multi_add_handle(multi, curl);
  for (;;) {
    int running = 0;
    if (curl_multi_perform(multi, &running) != CURLM_OK) {
      code = CURLE_FAILED_INIT;
      break;
    }
    if (running == 0) {
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
        if (message->msg == CURLMSG_DONE && message->easy_handle == curl) {
          code = message->data.result;
        }
      }
      break;
    }
    if (cancelled != nullptr && cancelled->load()) {
      aborted = true;
      break;
    }
    if (request.idle_timeout > std::chrono::milliseconds::zero() &&
        std::chrono::steady_clock::now() - transfer.last_data > request.idle_timeout) {
      idle = true;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, kCancelPollMilliseconds, nullptr);
  }
  curl_multi_remove_handle(multi, curl);
  curl_slist_free_all(headers);

  if (aborted) {
    why = HttpFailure::kCancelled;
    return fail("cancelled");
  }
  if (idle) {
    why = HttpFailure::kTimeout;
    return fail(fmt::format("no data for {} ms", request.idle_timeout.count()));
  }
  if (code == CURLE_WRITE_ERROR && transfer.ended_by_caller) code = CURLE_OK;
  if (code != CURLE_OK) {
    why = transfer.too_large ? HttpFailure::kTooLarge : Classify(code);
    if (transfer.too_large) {
      std::size_t limit = request.max_body_bytes;
      return fail(limit % (1u << 20) == 0 ? fmt::format("answer larger than {} MiB", limit >> 20)
                                          : fmt::format("answer larger than {} bytes", limit));
    }
    return fail(error_buffer[0] != '\0' ? std::string(error_buffer) : curl_easy_strerror(code));
  }
  why = HttpFailure::kNone;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  for (const auto& secret : Credentials(request)) {
    response.body = RedactSecret(std::move(response.body), secret);
    for (auto& [name, value] : response.headers) value = RedactSecret(std::move(value), secret);
  }
  return response;
}

}  // namespace schedwatch
