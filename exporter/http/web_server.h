// What the HTTP server's files share: the reply, one request's state, the threads that work for
// suspended connections, and WebServer::Impl. web.cc starts the server and routes a request,
// web_gate.cc checks it before it is served (framing, client certificate, password, rate limit,
// reload origin), web_metrics.cc answers /metrics and web_page_routes.cc the pages. Private to
// exporter/http/.
#pragma once

#include <microhttpd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exporter/http/web.h"
#include "exporter/http/web_auth.h"
#include "exporter/http/web_connections.h"
#include "exporter/http/web_rate_limit.h"
#include "exporter/pages/web_pages.h"

namespace schedwatch {

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

Reply Text(unsigned status, std::string body);

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

const char* Header(MHD_Connection* connection, const char* name);

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
  // The status pages and their JSON (/, /roles/, /api/v1/...), or 404.
  MHD_Result ServePages(Request* request, const std::string& path);
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

}  // namespace schedwatch
