// HTTP endpoints on civetweb: /metrics (finished bytes of the last refresh, gzip when asked),
// /-/healthy, /-/ready, POST /-/reload, the status page at / and JSON at /api/v1/status.
#pragma once

#include <functional>
#include <string>

#include "exporter/refresher.h"
#include "schedwatch/result.h"

struct mg_context;
struct mg_connection;

namespace schedwatch {

class WebServer {
 public:
  // `listen_address` in Prometheus form: ":9762", "127.0.0.1:9762", "[::1]:9762"; port 0 picks
  // a free one.
  static Result<std::unique_ptr<WebServer>> Start(const std::string& listen_address,
                                                  const std::string& telemetry_path,
                                                  Refresher& refresher);
  ~WebServer();
  int port() const { return port_; }

 private:
  WebServer(Refresher& refresher, std::string telemetry_path)
      : refresher_(refresher), telemetry_path_(std::move(telemetry_path)) {}
  static int Handle(struct mg_connection* connection, void* self);
  int Serve(struct mg_connection* connection);

  Refresher& refresher_;
  std::string telemetry_path_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace schedwatch
