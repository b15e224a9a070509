#include "exporter/http/web.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "exporter/exposition/process_metrics.h"
#include "exporter/http/metrics_response.h"
#include "exporter/http/web_auth.h"
#include "exporter/http/web_connections.h"
#include "exporter/http/web_listen.h"
#include "exporter/http/web_rate_limit.h"
#include "exporter/http/web_text.h"
#include "exporter/http/web_tls.h"
#include "exporter/pages/status_page.h"
#include "exporter/pages/web_pages.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

constexpr const char* kTextType = "text/plain; charset=utf-8";
constexpr std::size_t kConnectionMemory = 32 * 1024;  // request headers and I/O buffer
constexpr std::size_t kMaxBodyBytes = 64 * 1024;      // no endpoint reads a body
constexpr unsigned kThreadsPerListener = 2;
constexpr std::size_t kMaxPagesWaiting = 256;       // page requests suspended for the pages thread
constexpr std::size_t kPageBlockBytes = 32 * 1024;  // copied into the connection's buffer at once

struct Reply {
  unsigned status = 200;
  std::string content_type = kTextType;
  std::string body;
  PageCache::Body shared_body;  // when set, sent after `body`, without a copy
  std::vector<std::pair<std::string, std::string>> headers;
};

Reply Text(unsigned status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

// No room for a page now: the bytes of pages held (answers being sent, the cache) are at the
// budget, or too many page requests wait.
Reply PagesBusy() {
  Reply reply = Text(503, "too many pages are being rendered or sent; retry later\n");
  reply.headers.push_back({MHD_HTTP_HEADER_RETRY_AFTER, "5"});
  return reply;
}

// A reply's own bytes, then its shared page, read into the server's buffer a block at a time
// (the page is in pieces; one iovec part each would meet libmicrohttpd's IOV_MAX stall).
struct PageAnswer {
  std::string head;
  PageCache::Body page;
  std::size_t piece = 0, offset = 0;  // where the next read starts in the page

  static ssize_t Read(void* self, std::uint64_t position, char* out, std::size_t capacity) {
    auto* answer = static_cast<PageAnswer*>(self);
    std::size_t written = 0;
    if (position < answer->head.size()) {
      written = std::min(capacity, answer->head.size() - position);
      std::memcpy(out, answer->head.data() + position, written);
    }
    const auto& pieces = answer->page->pieces;
    while (written < capacity && answer->piece < pieces.size()) {
      const std::string& piece = pieces[answer->piece];
      std::size_t take = std::min(capacity - written, piece.size() - answer->offset);
      std::memcpy(out + written, piece.data() + answer->offset, take);
      written += take;
      answer->offset += take;
      if (answer->offset == piece.size()) {
        ++answer->piece;
        answer->offset = 0;
      }
    }
    // Reads come in order; nothing left before the promised length cuts the connection.
    return written > 0 ? static_cast<ssize_t>(written) : MHD_CONTENT_READER_END_WITH_ERROR;
  }
};

// One request (MHD's per-request closure), freed when MHD reports it completed. The fields a
// worker sets are read only after the worker resumed the connection.
struct Request {
  MHD_Connection* connection = nullptr;
  bool headers_read = false;
  bool nul_in_target = false;  // "%00" in the raw request target: refused, never cut
  std::size_t body_bytes = 0;
  // Written by the password checker's thread before it resumes the connection.
  PasswordChecker::Verdict auth = PasswordChecker::Verdict::kPending;
  // A page rendered on the pages thread: status pages of 10,000 roles take a second, which an
  // event thread must never spend.
  std::function<Reply()> render;
  std::optional<Reply> deferred_reply;
};

const char* Header(MHD_Connection* connection, const char* name) {
  return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

// Host of a "host[:port]" or "[v6][:port]" authority.
std::string HostOf(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    return close == std::string::npos ? authority : authority.substr(1, close - 1);
  }
  auto colon = authority.find(':');
  return colon == std::string::npos ? authority : authority.substr(0, colon);
}

bool IsIpLiteralOrLocalhost(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return Lower(host) == "localhost" || inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// A thread that does slow work (a reload, a bcrypt check) for suspended connections and
// resumes them; requests that queue up while it works are handed over together, so a storm of
// reloads costs one reload per round.
class Deferrer {
 public:
  using Work = std::function<void(std::vector<Request*>&)>;
  explicit Deferrer(Work work) : work_(std::move(work)), thread_([this] { Loop(); }) {}
  ~Deferrer() { Stop(); }

  // Suspends the request's connection until the work is done. False once stopping.
  bool Submit(Request* request) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    MHD_suspend_connection(request->connection);
    waiting_.push_back(request);
    wake_.notify_one();
    return true;
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Loop() {
    for (;;) {
      std::vector<Request*> batch;
      bool stopping = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
        batch.swap(waiting_);
        stopping = stopping_;
      }
      if (stopping) {
        // Every suspended connection must be resumed before the daemon stops.
        for (Request* request : batch) request->deferred_reply = Text(503, "shutting down\n");
      } else {
        try {
          work_(batch);
        } catch (const std::exception& e) {
          for (Request* request : batch) {
            if (!request->deferred_reply) request->deferred_reply = Text(500, "internal error\n");
          }
        }
      }
      for (Request* request : batch) MHD_resume_connection(request->connection);
      if (stopping) return;
    }
  }

  Work work_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Request*> waiting_;
  std::thread thread_;
};

// The overview's filters from the query string: ?condition=stale&source=prod&q=bill&limit=all
OverviewFilter OverviewFilterOf(MHD_Connection* connection) {
  OverviewFilter filter;
  auto argument = [connection](const char* name) {
    const char* value = MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
    return std::string(value != nullptr ? value : "");
  };
  filter.condition = argument("condition");
  filter.source = argument("source");
  filter.query = argument("q").substr(0, 200);
  filter.label = argument("label").substr(0, 300);
  std::string limit = argument("limit");
  if (limit == "all") {
    filter.limit = 0;
  } else if (!limit.empty() && limit.size() < 7 &&
             limit.find_first_not_of("0123456789") == std::string::npos && std::stoul(limit) > 0) {
    filter.limit = std::stoul(limit);
  }
  return filter;
}

void LogFromMhd(void*, const char* format, va_list arguments) {
  char message[512];
  std::vsnprintf(message, sizeof(message), format, arguments);
  std::string text = Trim(message);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  Log(LogLevel::kDebug, "http server", {{"msg", text}});
}

}  // namespace

namespace {

// An element's quality, 1 unless a `q=` parameter says otherwise; 0 when that is not a number
// from 0 to 1.
double Quality(const std::vector<std::string>& parameters) {
  double q = 1;
  for (std::size_t i = 1; i < parameters.size(); ++i) {
    std::string parameter = Lower(parameters[i]);
    if (parameter.rfind("q=", 0) != 0) continue;
    char* end = nullptr;
    q = std::strtod(parameter.c_str() + 2, &end);
    if (end == parameter.c_str() + 2 || *end != '\0' || !(q >= 0 && q <= 1)) q = 0;
  }
  return q;
}

}  // namespace

// RFC 9110 section 12.5.3: "gzip;q=0" refuses gzip; "*" stands for every coding not named.
bool AcceptsGzip(const char* accept_encoding) {
  if (accept_encoding == nullptr) return false;
  std::optional<double> gzip, any;
  for (const auto& element : Split(accept_encoding, ',')) {
    auto parameters = Split(element, ';');
    if (parameters.empty()) continue;
    std::string coding = Lower(parameters[0]);
    double q = Quality(parameters);
    if (coding == "gzip" || coding == "x-gzip") {
      gzip = q;
    } else if (coding == "*") {
      any = q;
    }
  }
  if (gzip) return *gzip > 0;
  return any && *any > 0;
}

// As client_golang's expfmt.NegotiateIncludingOpenMetrics: the media ranges by quality, the
// named before wildcards, and the first that is text 0.0.4 or OpenMetrics (1.0.0, 0.0.1 or no
// version) wins; text when none is. Unlike goautoneg, q=0 refuses (RFC 9110) and equal ranges
// keep their order.
std::string_view NegotiateExposition(const char* accept) {
  if (accept == nullptr) return kTextContentType;
  struct Range {
    double q;
    int specificity;  // 2: type/subtype, 1: type/*, 0: */*
    std::string_view content_type;
  };
  std::vector<Range> ranges;
  for (const auto& element : Split(accept, ',')) {
    auto parameters = Split(element, ';');
    if (parameters.empty()) continue;
    std::string media = Lower(parameters[0]);
    std::string version;
    for (std::size_t i = 1; i < parameters.size(); ++i) {
      std::string parameter = Lower(parameters[i]);
      if (parameter.rfind("version=", 0) == 0) version = Trim(parameter.substr(8));
    }
    double q = Quality(parameters);
    if (q <= 0) continue;
    int specificity = media == "*/*"                                                      ? 0
                      : media.size() > 2 && media.compare(media.size() - 2, 2, "/*") == 0 ? 1
                                                                                          : 2;
    std::string_view type;  // empty: a range that names neither form
    if (media == "text/plain" && (version.empty() || version == "0.0.4")) {
      type = kTextContentType;
    } else if (media == "application/openmetrics-text" && version == "1.0.0") {
      type = kOpenMetricsContentType;
    } else if (media == "application/openmetrics-text" && (version.empty() || version == "0.0.1")) {
      type = kOpenMetrics001ContentType;
    }
    ranges.push_back({q, specificity, type});
  }
  std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.q != b.q ? a.q > b.q : a.specificity > b.specificity;
  });
  for (const Range& range : ranges) {
    if (!range.content_type.empty()) return range.content_type;
  }
  return kTextContentType;
}

struct WebServer::Impl {
  Impl(const WebOptions& options, Refresher& refresher)
      : options_(options), refresher_(refresher) {}
  ~Impl();

  Result<bool> LoadTls();
  Result<bool> Start();
  static void ConnectionStarted(void* self, MHD_Connection* connection, void** socket_context,
                                MHD_ConnectionNotificationCode code);
  static void* RequestLine(void* self, const char* uri, MHD_Connection* connection);
  static void RequestCompleted(void* self, MHD_Connection* connection, void** closure,
                               MHD_RequestTerminationCode code);
  static MHD_Result Access(void* self, MHD_Connection* connection, const char* url,
                           const char* method, const char* version, const char* upload_data,
                           std::size_t* upload_data_size, void** request);
  MHD_Result Serve(MHD_Connection* connection, const std::string& path, const std::string& method,
                   const std::string& version, std::size_t* upload_data_size, void** closure);
  std::optional<Reply> CheckFraming(MHD_Connection* connection, const std::string& version,
                                    const Request& request);
  MHD_Result Queue(MHD_Connection* connection, const Reply& reply);
  MHD_Result ServeMetrics(MHD_Connection* connection);
  std::optional<Reply> CheckClientCertificate(MHD_Connection* connection);
  std::optional<Reply> CheckReloadOrigin(MHD_Connection* connection);
  void AddConfiguredHeaders(MHD_Response* response);
  bool ConfiguresHeader(const std::string& lower_case_name) const;
  void ReloadBatch(std::vector<Request*>& batch);
  static void RenderBatch(std::vector<Request*>& batch);
  MHD_Result Defer(Deferrer& deferrer, Request* request);
  // A page (/ or /api/v1/status) rendered on the pages thread by `render`, which takes the page
  // cache, or answered from the cache.
  MHD_Result ServePage(Request* request, std::function<Reply(PageCache&)> render);
  std::optional<Reply> CheckPassword(MHD_Connection* connection, Request* request);
  // rate_limit: a token for a request that is not an authenticated scrape, or the 429 to send.
  std::optional<Reply> Limit();
  // `refusal` (an authentication failure), or 429 when the bucket is empty.
  Reply LimitRefusal(Reply refusal);

  WebOptions options_;
  Refresher& refresher_;
  std::vector<Listener> listeners_;
  std::vector<MHD_Daemon*> daemons_;
  std::string tls_key_, tls_cert_, tls_trust_, tls_priorities_;
  std::unique_ptr<Deferrer> reloads_, pages_;
  std::unique_ptr<PasswordChecker> auth_checks_;
  std::unique_ptr<ConnectionGuard> guard_;
  std::unique_ptr<PageCache> page_cache_;
  std::unique_ptr<RateLimiter> limiter_;
  std::atomic<std::size_t> pages_waiting_{0};
};

WebServer::Impl::~Impl() {
  // Resume every suspended connection first: the daemons may not stop with one suspended.
  if (reloads_) reloads_->Stop();
  if (auth_checks_) auth_checks_->Stop();
  if (pages_) pages_->Stop();
  for (MHD_Daemon* daemon : daemons_) {
    // Taken back and closed here: MHD_stop_daemon would shut the socket down, and a socket
    // systemd passed must go on listening for the next start.
    MHD_socket listen_fd = MHD_quiesce_daemon(daemon);
    MHD_stop_daemon(daemon);
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
  }
  guard_.reset();  // after the daemons: their callbacks use it
}

Result<bool> WebServer::Impl::LoadTls() {
  const auto& config = options_.web_config;
  if (!config || !config->tls) return true;
  auto material = LoadTlsMaterial(*config->tls);
  if (!material) return Error{material.error()};
  tls_key_ = std::move(material->key);
  tls_cert_ = std::move(material->cert);
  tls_trust_ = std::move(material->trust);
  tls_priorities_ = std::move(material->priorities);
  return true;
}

std::optional<Reply> WebServer::Impl::CheckClientCertificate(MHD_Connection* connection) {
  if (!options_.web_config || !options_.web_config->tls) return std::nullopt;
  auto refusal = ClientCertificateRefusal(connection, options_.web_config->tls->client_auth_type);
  if (!refusal) return std::nullopt;
  return Text(403, *refusal);
}

Result<bool> WebServer::Impl::Start() {
  const auto& config = options_.web_config;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                   MHD_USE_ERROR_LOG;
  if (config && config->tls) flags |= MHD_USE_TLS;
  if (config && !config->basic_auth_users.empty()) {
    auth_checks_ = std::make_unique<PasswordChecker>(config->basic_auth_users);
  }
  reloads_ = std::make_unique<Deferrer>([this](auto& batch) { ReloadBatch(batch); });
  pages_ = std::make_unique<Deferrer>([this](auto& batch) {
    RenderBatch(batch);
    pages_waiting_.fetch_sub(batch.size());
  });
  page_cache_ = std::make_unique<PageCache>(options_.max_page_bytes);
  if (config && config->rate_limit) {
    limiter_ =
        std::make_unique<RateLimiter>(config->rate_limit->interval, config->rate_limit->burst);
  }
  guard_ = std::make_unique<ConnectionGuard>(options_.read_header_timeout,
                                             std::chrono::seconds(options_.idle_timeout_seconds));
  // One address may hold some of the connections, never all: the others stay for everyone else
  // (loopback is a /8: 127.0.0.2 is another address than 127.0.0.1).
  unsigned per_address =
      std::min(options_.max_connections_per_ip, std::max(1u, options_.max_connections / 2));

  std::vector<PassedSocket> sockets;
  if (options_.systemd_socket) {
    auto passed = SystemdSockets();
    if (!passed) return Error{passed.error()};
    sockets = std::move(*passed);
  } else {
    for (const auto& address : options_.listen_addresses) {
      PassedSocket socket{-1, address, 0};
      auto fd = Listen(address, socket.port);
      if (!fd) {
        for (const auto& opened : sockets) close(opened.fd);
        return Error{fd.error()};
      }
      socket.fd = *fd;
      sockets.push_back(std::move(socket));
    }
  }
  for (std::size_t i = 0; i < sockets.size(); ++i) {
    const std::string& address = sockets[i].address;
    const int port = sockets[i].port;
    const int fd = sockets[i].fd;
    std::vector<MHD_OptionItem> items = {
        {MHD_OPTION_LISTEN_SOCKET, fd, nullptr},
        {MHD_OPTION_THREAD_POOL_SIZE, kThreadsPerListener, nullptr},
        {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(options_.max_connections), nullptr},
        {MHD_OPTION_PER_IP_CONNECTION_LIMIT, static_cast<intptr_t>(per_address), nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, static_cast<intptr_t>(options_.idle_timeout_seconds),
         nullptr},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(kConnectionMemory), nullptr},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Impl::RequestCompleted), this},
        {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&Impl::RequestLine), this},
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&LogFromMhd), nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Impl::ConnectionStarted), this},
    };
    if (flags & MHD_USE_TLS) {
      auto text = [](const std::string& value) {
        return MHD_OptionItem{MHD_OPTION_END, reinterpret_cast<intptr_t>(value.c_str()),
                              const_cast<char*>(value.c_str())};
      };
      items.push_back(text(tls_key_));
      items.back().option = MHD_OPTION_HTTPS_MEM_KEY;
      items.push_back(text(tls_cert_));
      items.back().option = MHD_OPTION_HTTPS_MEM_CERT;
      items.push_back(text(tls_priorities_));
      items.back().option = MHD_OPTION_HTTPS_PRIORITIES;
      if (!tls_trust_.empty()) {
        items.push_back(text(tls_trust_));
        items.back().option = MHD_OPTION_HTTPS_MEM_TRUST;
      }
    }
    items.push_back({MHD_OPTION_END, 0, nullptr});
    MHD_Daemon* daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::Access, this,
                                          MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
    if (daemon == nullptr) {
      for (std::size_t j = i; j < sockets.size(); ++j) close(sockets[j].fd);
      return Error{
          fmt::format("cannot serve on {}: the HTTP server did not start{}", address,
                      (flags & MHD_USE_TLS) ? " (check the TLS key and certificate)" : "")};
    }
    daemons_.push_back(daemon);
    listeners_.push_back({address, port});
  }
  return true;
}

MHD_Result WebServer::Impl::Access(void* self, MHD_Connection* connection, const char* url,
                                   const char* method, const char* version, const char*,
                                   std::size_t* upload_data_size, void** closure) {
  // No exception may cross into libmicrohttpd: one that escapes closes the connection.
  try {
    return static_cast<Impl*>(self)->Serve(connection, url ? url : "/", method ? method : "",
                                           version ? version : "", upload_data_size, closure);
  } catch (...) {
    return MHD_NO;
  }
}

// Before the TLS handshake: a client certificate the configuration requires, or one that does
// not verify, fails the handshake itself (as Go's crypto/tls does); CheckClientCertificate
// checks each request again.
void WebServer::Impl::ConnectionStarted(void* self, MHD_Connection* connection, void**,
                                        MHD_ConnectionNotificationCode code) {
  auto* impl = static_cast<Impl*>(self);
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    impl->guard_->Closed(connection);
    return;
  }
  impl->guard_->Started(connection);
  if (!impl->options_.web_config || !impl->options_.web_config->tls) {
    return;
  }
  ConfigureClientCertificate(connection, impl->options_.web_config->tls->client_auth_type);
}

// Called with the request target as sent, before libmicrohttpd decodes it: the request is
// made here, so that what decoding would hide can be refused.
void* WebServer::Impl::RequestLine(void* self, const char* uri, MHD_Connection* connection) {
  static_cast<Impl*>(self)->guard_->RequestLine(connection);
  auto* request = new Request;
  request->connection = connection;
  request->nul_in_target = uri != nullptr && std::strstr(uri, "%00") != nullptr;
  return request;  // freed by RequestCompleted, which libmicrohttpd now always calls
}

void WebServer::Impl::RequestCompleted(void* self, MHD_Connection* connection, void** closure,
                                       MHD_RequestTerminationCode) {
  delete static_cast<Request*>(*closure);
  *closure = nullptr;
  static_cast<Impl*>(self)->guard_->RequestDone(connection);
}

bool WebServer::Impl::ConfiguresHeader(const std::string& lower_case_name) const {
  if (!options_.web_config) return false;
  for (const auto& header : options_.web_config->headers) {
    if (Lower(header.first) == lower_case_name) return true;
  }
  return false;
}

// The headers every answer carries: the configured ones, and nosniff (unless configured), so
// no browser reads an answer as another type than it says.
void WebServer::Impl::AddConfiguredHeaders(MHD_Response* response) {
  if (!ConfiguresHeader("x-content-type-options")) {
    MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  }
  if (!options_.web_config) return;
  for (const auto& [name, value] : options_.web_config->headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
}

MHD_Result WebServer::Impl::Queue(MHD_Connection* connection, const Reply& reply) {
  MHD_Response* response = nullptr;
  if (reply.shared_body) {
    // The answer holds a reference to the shared bytes until it is sent, and sends from them
    // as they are: a hundred readers of one page hold one copy.
    auto answer = std::make_unique<PageAnswer>(PageAnswer{reply.body, reply.shared_body});
    response = MHD_create_response_from_callback(
        answer->head.size() + answer->page->size, kPageBlockBytes, &PageAnswer::Read, answer.get(),
        [](void* held) { delete static_cast<PageAnswer*>(held); });
    if (response != nullptr) answer.release();
  } else {
    response = MHD_create_response_from_buffer(
        reply.body.size(), const_cast<char*>(reply.body.data()), MHD_RESPMEM_MUST_COPY);
  }
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  for (const auto& [name, value] : reply.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  AddConfiguredHeaders(response);
  MHD_Result queued = MHD_queue_response(connection, reply.status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result WebServer::Impl::ServeMetrics(MHD_Connection* connection) {
  // A copy of the chunk list, not the refresh: a slow reader then holds chunks that later
  // refreshes mostly share, never a whole RefreshResult per refresh it outlives.
  std::string_view type = NegotiateExposition(Header(connection, MHD_HTTP_HEADER_ACCEPT));
  std::shared_ptr<const Published> current = refresher_.Current();
  ExpositionForm form{type != kTextContentType, current->counting_since};
  auto text = std::make_shared<const ChunkedText>(form.open_metrics ? current->openmetrics
                                                                    : current->metrics);
  current.reset();
  std::string process;  // and the page counters: what the scrape reads itself
  RenderPageMetrics(page_cache_->counts(), form, process);
  RenderRateLimitMetrics(limiter_ ? limiter_->limited() : 0, form, process);
  if (auto stats = ReadProcessStats()) RenderProcessMetrics(*stats, form, process);
  if (form.open_metrics) process += "# EOF\n";
  bool gzip = false;
  MHD_Response* response = CreateMetricsResponse(
      std::move(text), process, AcceptsGzip(Header(connection, MHD_HTTP_HEADER_ACCEPT_ENCODING)),
      &gzip);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, std::string(type).c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(response, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
  if (gzip) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  AddConfiguredHeaders(response);
  MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

// A browser can send a form POST to any site without asking first (no CORS preflight), and a
// page on a foreign name that resolves to this host (DNS rebinding) is "same origin" to it.
// So: no form content types, and a request from a browser only from a page served by this
// exporter under an IP literal or localhost. Clients that send no Origin are not browsers.
std::optional<Reply> WebServer::Impl::CheckReloadOrigin(MHD_Connection* connection) {
  if (const char* type = Header(connection, MHD_HTTP_HEADER_CONTENT_TYPE)) {
    std::string media = Lower(Trim(std::string(type).substr(0, std::string(type).find(';'))));
    if (media == "application/x-www-form-urlencoded" || media == "multipart/form-data" ||
        media == "text/plain") {
      return Text(403, fmt::format("reload refused: content type {} is what a cross-site form "
                                   "sends\n",
                                   media));
    }
  }
  const char* origin = Header(connection, "Origin");
  const char* fetch_site = Header(connection, "Sec-Fetch-Site");
  if (origin == nullptr && fetch_site == nullptr) return std::nullopt;
  if (fetch_site != nullptr && Lower(fetch_site) != "same-origin" && Lower(fetch_site) != "none") {
    return Text(403, "reload refused: cross-site request\n");
  }
  const char* host = Header(connection, MHD_HTTP_HEADER_HOST);
  std::string origin_authority;
  if (origin != nullptr) {
    std::string text = origin;
    auto scheme = text.find("://");
    if (scheme != std::string::npos) origin_authority = Lower(text.substr(scheme + 3));
  }
  if (host == nullptr || origin_authority.empty() || origin_authority != Lower(host) ||
      !IsIpLiteralOrLocalhost(HostOf(host))) {
    return Text(403,
                "reload refused: a browser may reload only from a page of this exporter "
                "opened by IP address or localhost\n");
  }
  return std::nullopt;
}

void WebServer::Impl::ReloadBatch(std::vector<Request*>& batch) {
  // One reload answers every request that was waiting when it started: each of them asked
  // for a reload after its own edit of the file, and this one reads the file after all of them.
  auto reloaded = refresher_.Reload();
  Reply reply =
      reloaded ? Text(200, "") : Text(500, "failed to reload config: " + reloaded.error() + "\n");
  for (Request* request : batch) request->deferred_reply = reply;
}

void WebServer::Impl::RenderBatch(std::vector<Request*>& batch) {
  // Requests for the same roles share one rendering through the page cache.
  for (Request* request : batch) request->deferred_reply = request->render();
}

// Basic auth: nullopt when the request may go on (accepted, or suspended while bcrypt checks
// it), else the refusal to send.
std::optional<Reply> WebServer::Impl::CheckPassword(MHD_Connection* connection, Request* request) {
  using Verdict = PasswordChecker::Verdict;
  Reply unauthorized = Text(401, "Unauthorized\n");
  unauthorized.headers.push_back(
      {MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"schedwatch\", charset=\"UTF-8\""});
  auto busy = [](unsigned status, const char* retry_after) {
    Reply reply = Text(status, "too many password checks waiting; retry later\n");
    reply.headers.push_back({MHD_HTTP_HEADER_RETRY_AFTER, retry_after});
    return reply;
  };
  auto answer = [&](Verdict verdict) -> std::optional<Reply> {
    switch (verdict) {
      case Verdict::kAccepted:
      case Verdict::kPending:
        return std::nullopt;
      case Verdict::kRefused:
        return unauthorized;
      case Verdict::kClientBusy:
        return busy(429, "1");
      case Verdict::kServerBusy:
        break;
    }
    return busy(503, "5");
  };
  if (request->auth != Verdict::kPending) return answer(request->auth);  // checked, resumed
  char* password = nullptr;
  char* user = MHD_basic_auth_get_username_password(connection, &password);
  if (user == nullptr) {
    if (password != nullptr) MHD_free(password);
    return unauthorized;
  }
  std::string name = user, secret = password != nullptr ? password : "";
  MHD_free(user);
  if (password != nullptr) {
    std::memset(password, 0, std::strlen(password));
    MHD_free(password);
  }
  // bcrypt takes a third of a second on purpose: never on this thread.
  Verdict verdict =
      auth_checks_->Check(connection, PasswordChecker::ClientOf(connection), name, secret,
                          [request](Verdict checked) { request->auth = checked; });
  if (verdict != Verdict::kPending) request->auth = verdict;
  return answer(verdict);
}

std::optional<Reply> WebServer::Impl::Limit() {
  if (!limiter_) return std::nullopt;
  auto wait = limiter_->Take(RateLimiter::Clock::now());
  if (!wait) return std::nullopt;
  Reply reply = Text(429, "Too Many Requests\n");
  reply.headers.push_back({MHD_HTTP_HEADER_RETRY_AFTER, std::to_string(wait->count())});
  return reply;
}

Reply WebServer::Impl::LimitRefusal(Reply refusal) {
  auto limited = Limit();
  return limited ? *limited : refusal;
}

MHD_Result WebServer::Impl::ServePage(Request* request, std::function<Reply(PageCache&)> render) {
  // Which roles a page shows is known only once its filters ran, on the pages thread.
  if (pages_waiting_.load() >= kMaxPagesWaiting) {
    page_cache_->CountRefused();
    return Queue(request->connection, PagesBusy());
  }
  request->render = [this, render = std::move(render)] { return render(*page_cache_); };
  return Defer(*pages_, request);
}

MHD_Result WebServer::Impl::Defer(Deferrer& deferrer, Request* request) {
  bool page = &deferrer == pages_.get();
  if (page) pages_waiting_.fetch_add(1);  // the pages thread takes it off with each batch
  if (!deferrer.Submit(request)) {
    if (page) pages_waiting_.fetch_sub(1);
    return Queue(request->connection, Text(503, "shutting down\n"));
  }
  return MHD_YES;
}

// What libmicrohttpd lets through but a proxy in front may read otherwise (request
// smuggling), or a path it would cut: 400, and the connection is closed.
std::optional<Reply> WebServer::Impl::CheckFraming(MHD_Connection* connection,
                                                   const std::string& version,
                                                   const Request& request) {
  struct Framing {
    int hosts = 0, lengths = 0, transfer_encodings = 0;
    std::set<std::string> length_values;
  } framing;
  MHD_get_connection_values(
      connection, MHD_HEADER_KIND,
      [](void* cls, MHD_ValueKind, const char* key, const char* value) {
        auto* found = static_cast<Framing*>(cls);
        std::string name = Lower(key != nullptr ? key : "");
        if (name == "host") ++found->hosts;
        if (name == "transfer-encoding") ++found->transfer_encodings;
        if (name == "content-length") {
          ++found->lengths;
          found->length_values.insert(Trim(value != nullptr ? value : ""));
        }
        return MHD_YES;
      },
      &framing);
  auto bad = [](std::string why) {
    Reply reply = Text(400, "Bad Request: " + why + "\n");
    reply.headers.push_back({MHD_HTTP_HEADER_CONNECTION, "close"});
    return reply;
  };
  if (request.nul_in_target) return bad("%00 in the request target");
  if (framing.lengths > 0 && framing.transfer_encodings > 0) {
    return bad("both Content-Length and Transfer-Encoding");
  }
  if (framing.length_values.size() > 1) return bad("different Content-Length values");
  if (framing.lengths > 0 &&
      framing.length_values.begin()->find_first_not_of("0123456789") != std::string::npos) {
    return bad("Content-Length is not a number");
  }
  if (framing.transfer_encodings > 1) return bad("more than one Transfer-Encoding");
  if (framing.hosts > 1) return bad("more than one Host");
  if (framing.hosts == 0 && version == MHD_HTTP_VERSION_1_1) return bad("HTTP/1.1 without Host");
  return std::nullopt;
}

MHD_Result WebServer::Impl::Serve(MHD_Connection* connection, const std::string& path,
                                  const std::string& method, const std::string& version,
                                  std::size_t* upload_data_size, void** closure) {
  auto* request = static_cast<Request*>(*closure);
  if (request == nullptr) {  // made by RequestLine; this only if libmicrohttpd skipped it
    request = new Request;
    request->connection = connection;
    *closure = request;
  }
  if (!request->headers_read) {  // headers read; a body, if any, comes in the next calls
    request->headers_read = true;
    if (auto refused = CheckFraming(connection, version, *request)) {
      return Queue(connection, *refused);  // before the body: it is never read
    }
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    request->body_bytes += *upload_data_size;
    *upload_data_size = 0;
    return request->body_bytes > kMaxBodyBytes ? MHD_NO : MHD_YES;
  }
  guard_->RequestRead(connection);  // the whole request is in
  if (request->deferred_reply) return Queue(connection, *request->deferred_reply);

  // rate_limit is charged after authentication, so that no flood of others can refuse a scrape
  // that passes it: a failed authentication takes a token (and is answered 429 when none is
  // left), as does every request but a scrape; a scrape that passed takes none.
  if (auto refused = CheckClientCertificate(connection)) {
    return Queue(connection, LimitRefusal(*refused));
  }
  if (auth_checks_ && request->auth != PasswordChecker::Verdict::kAccepted) {
    if (auto refused = CheckPassword(connection, request)) {
      return Queue(connection, LimitRefusal(*refused));
    }
    if (request->auth == PasswordChecker::Verdict::kPending) return MHD_YES;  // suspended
  }

  const bool readable = method == MHD_HTTP_METHOD_GET || method == MHD_HTTP_METHOD_HEAD;
  if (!(readable && path == options_.telemetry_path)) {
    if (auto limited = Limit()) return Queue(connection, *limited);
  }
  auto not_allowed = [&](const char* allow) {
    Reply reply = Text(405, fmt::format("method {} not allowed; use {}\n", method, allow));
    reply.headers.push_back({MHD_HTTP_HEADER_ALLOW, allow});
    return Queue(connection, reply);
  };
  if (path == options_.telemetry_path) {
    if (!readable) return not_allowed("GET, HEAD");
    return ServeMetrics(connection);
  }
  if (path == "/-/reload") {
    if (method != MHD_HTTP_METHOD_POST && method != MHD_HTTP_METHOD_PUT) {
      return not_allowed("POST, PUT");
    }
    if (!options_.enable_lifecycle) {
      return Queue(connection, Text(403, "Lifecycle API is not enabled.\n"));
    }
    if (auto refused = CheckReloadOrigin(connection)) return Queue(connection, *refused);
    // The reload runs on its own thread; this connection waits, suspended, for its answer.
    if (!reloads_->Submit(request)) return Queue(connection, Text(503, "shutting down\n"));
    return MHD_YES;
  }
  const bool role_page = path.rfind("/roles/", 0) == 0;
  const bool role_json = path.rfind("/api/v1/roles/", 0) == 0;
  if (path == "/" || path == "/api/v1/status" || path == "/-/healthy" || path == "/-/ready" ||
      path == kStatusScriptPath || path == kStatusStylePath || role_page || role_json) {
    if (!readable) return not_allowed("GET, HEAD");
  }
  if (path == "/-/healthy") return Queue(connection, Text(200, "schedwatch is healthy.\n"));
  if (path == "/-/ready") {
    return Queue(connection,
                 refresher_.Ready()
                     ? Text(200, "schedwatch is ready.\n")
                     : Text(503, "schedwatch is not ready: no complete refresh yet.\n"));
  }
  if (path == kStatusScriptPath || path == kStatusStylePath) {
    bool script = path == kStatusScriptPath;
    Reply reply = Text(200, script ? StatusScript() : StatusStyle());
    reply.content_type = script ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8";
    return Queue(connection, reply);
  }
  PageOptions page;
  page.telemetry_path = options_.telemetry_path;
  page.runbook_url = options_.runbook_url;
  // Pages are rendered on the pages thread from the refresh published now; the connection
  // waits, suspended, and /metrics is never queued behind them.
  std::shared_ptr<const Published> published = refresher_.Current();
  if (path == "/api/v1/status") {
    // ?label=team=db: the roles with that label only.
    std::string label = OverviewFilterOf(connection).label;
    return ServePage(request, [published, page, label](PageCache& cache) {
      const RefreshResult& result = published->result;
      auto roles = SelectStatusRoles(result, label);
      Reply reply;
      reply.shared_body = cache.Get(
          published, {"/api/v1/status", roles},
          [&](const PageSink& sink) { return RenderStatusJson(result, page, roles, sink); });
      if (!reply.shared_body) return PagesBusy();
      reply.content_type = "application/json";
      return reply;
    });
  }
  if (role_json) {
    std::string role = path.substr(std::strlen("/api/v1/roles/"));
    request->render = [published, page, role] {
      auto json = RenderRoleJson(published->result, role, page);
      nlohmann::json missing{{"error", "no such role in the spec"}, {"role", role}};
      const ShardAssignment& shard = published->result.shard;
      if (shard.Sharded()) {
        missing["error"] = "no such role in this shard's part of the spec";
        missing["shard"] = ShardAssignment::Of(role, shard.total);  // where one of that name is
      }
      Reply reply =
          json ? Text(200, std::move(*json))
               : Text(404, missing.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      reply.content_type = "application/json";
      return reply;
    };
    return Defer(*pages_, request);
  }
  if (path == "/" || role_page) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!ConfiguresHeader(Lower(MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY))) {
      headers.push_back({MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, kStatusPagePolicy});
    }
    if (role_page) {
      request->render = [published, page, path, headers] {
        auto html = RenderRoleHtml(published->result, path.substr(std::strlen("/roles/")), page);
        const ShardAssignment& shard = published->result.shard;
        Reply reply =
            html ? Text(200, std::move(*html))
            : shard.Sharded()
                ? Text(404, fmt::format("no such role in this shard's part of the spec: one of "
                                        "that name is shard {}'s\n",
                                        ShardAssignment::Of(path.substr(std::strlen("/roles/")),
                                                            shard.total)))
                : Text(404, "no such role in the spec\n");
        if (html) reply.content_type = "text/html; charset=utf-8";
        reply.headers = headers;
        return reply;
      };
      return Defer(*pages_, request);
    }
    // The rows of ?limit=all at 10,000 roles are as big as the JSON: rendered once per set of
    // roles shown and refresh, whichever filters chose them; the head names the filters.
    OverviewFilter filter = OverviewFilterOf(connection);
    return ServePage(request, [published, page, filter, headers](PageCache& cache) {
      const RefreshResult& result = published->result;
      OverviewSelection selection = SelectOverview(result, filter);
      Reply reply;
      reply.shared_body = cache.Get(published, {"/", selection.drawn}, [&](const PageSink& sink) {
        return RenderOverviewRows(result, selection, sink);
      });
      if (!reply.shared_body) return PagesBusy();
      reply.body = RenderOverviewHead(result, page, filter, selection);
      reply.content_type = "text/html; charset=utf-8";
      reply.headers = headers;
      return reply;
    });
  }
  return Queue(connection, Text(404, "404 page not found\n"));
}

WebServer::WebServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WebServer::~WebServer() = default;

const std::vector<WebServer::Listener>& WebServer::listeners() const { return impl_->listeners_; }

Result<std::unique_ptr<WebServer>> WebServer::Start(const WebOptions& options, Refresher& refresher,
                                                    bool* web_config_error) {
  if (options.listen_addresses.empty() && !options.systemd_socket) {
    return Error{"no --web.listen-address"};
  }
  auto impl = std::make_unique<Impl>(options, refresher);
  auto tls = impl->LoadTls();
  if (!tls) {
    if (web_config_error != nullptr) *web_config_error = true;
    return Error{tls.error()};
  }
  auto started = impl->Start();
  if (!started) return Error{started.error()};
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

}  // namespace schedwatch
