// HTTP endpoints on libmicrohttpd: /metrics (finished bytes of the last refresh, gzip when asked),
// /-/healthy, /-/ready, POST /-/reload (with --web.enable-lifecycle), the status page at / and
// JSON at /api/v1/status. Event-driven: an idle connection costs a descriptor and a small
// bounded buffer, never a thread, and no handler waits for anything; reloads and password checks
// run on their own threads while their connection is suspended.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/exposition/exposition.h"
#include "exporter/http/web_config.h"
#include "exporter/pages/explain.h"
#include "exporter/refresh/refresher.h"
#include "schedwatch/result.h"

namespace schedwatch {

struct WebOptions {
  // Prometheus form: ":9762" (every address, IPv4 and IPv6), "127.0.0.1:9762", "[::1]:9762",
  // "[::]:9762", "localhost:9762"; port 0 picks a free one.
  std::vector<std::string> listen_addresses{":9762"};
  // --web.systemd-socket: serve on the sockets systemd passed instead of listen_addresses.
  bool systemd_socket = false;
  std::string telemetry_path = "/metrics";
  bool enable_lifecycle = false;  // POST /-/reload
  unsigned max_connections = 4096;
  unsigned max_connections_per_ip = 128;  // at most half of max_connections
  unsigned idle_timeout_seconds = 30;
  // The whole of a request (line, headers, body) must arrive within this of the connection's
  // accept, or of its request line on a kept-alive connection.
  std::chrono::milliseconds read_header_timeout{10000};
  // Bytes of status pages held by the page cache, by answers not yet sent and by the page being
  // rendered, charged before they are made; a page that would pass it is refused with 503
  // (exporter/pages/web_pages.h).
  std::size_t max_page_bytes = 96u << 20;
  std::optional<WebConfig> web_config;           // TLS, basic auth, headers
  std::string runbook_url = kDefaultRunbookUrl;  // the status page's runbook links
};

class WebServer {
 public:
  struct Listener {
    std::string address;  // as given
    int port = 0;         // as bound
  };
  // `web_config_error` (optional) is set when the failure lies in the web configuration's TLS
  // files rather than in listening.
  static Result<std::unique_ptr<WebServer>> Start(const WebOptions& options, Refresher& refresher,
                                                  bool* web_config_error = nullptr);
  ~WebServer();
  const std::vector<Listener>& listeners() const;

  struct Impl;

 private:
  explicit WebServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether an Accept-Encoding header value accepts gzip (q-values honoured; "*" counts).
bool AcceptsGzip(const char* accept_encoding);

// The /metrics form an Accept header value asks for, as its Content-Type: kTextContentType,
// kOpenMetricsContentType or kOpenMetrics001ContentType (the same body).
std::string_view NegotiateExposition(const char* accept);

// Raises the soft limit of open files to the hard limit (as Go does at start), so that the
// connection limit can be reached. Returns the soft limit in force.
std::size_t RaiseOpenFileLimit();

}  // namespace schedwatch
