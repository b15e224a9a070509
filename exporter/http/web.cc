#include "exporter/http/web.h"

#include <fmt/format.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netdb.h>
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
#include <sstream>
#include <thread>
#include <vector>

#include "exporter/http/web_auth.h"
#include "exporter/http/web_connections.h"
#include "exporter/http/web_listen.h"
#include "exporter/http/web_rate_limit.h"
#include "exporter/http/web_server.h"
#include "exporter/http/web_text.h"
#include "exporter/http/web_tls.h"
#include "exporter/pages/status_page.h"
#include "exporter/pages/web_pages.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

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

void LogFromMhd(void*, const char* format, va_list arguments) {
  char message[512];
  std::vsnprintf(message, sizeof(message), format, arguments);
  std::string text = Trim(message);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  Log(LogLevel::kDebug, "http server", {{"msg", text}});
}

}  // namespace

Reply Text(unsigned status, std::string body) {
  Reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

const char* Header(MHD_Connection* connection, const char* name) {
  return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

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

void WebServer::Impl::ReloadBatch(std::vector<Request*>& batch) {
  // One reload answers every request that was waiting when it started: each of them asked
  // for a reload after its own edit of the file, and this one reads the file after all of them.
  auto reloaded = refresher_.Reload();
  Reply reply =
      reloaded ? Text(200, "") : Text(500, "failed to reload config: " + reloaded.error() + "\n");
  for (Request* request : batch) request->deferred_reply = reply;
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
  return ServePages(request, path);
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
