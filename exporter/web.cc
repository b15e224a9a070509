#include "exporter/web.h"

#include <civetweb.h>
#include <fmt/format.h>

#include <cstring>

#include "exporter/status_page.h"

namespace schedwatch {
namespace {

constexpr const char* kExpositionType = "text/plain; version=0.0.4; charset=utf-8";

void Send(mg_connection* connection, int status, const char* content_type, const std::string& body,
          const char* extra_headers = "") {
  mg_printf(connection,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n%s\r\n",
            status, mg_get_response_code_text(connection, status), content_type, body.size(),
            extra_headers);
  mg_write(connection, body.data(), body.size());
}

bool AcceptsGzip(mg_connection* connection) {
  const char* accept = mg_get_header(connection, "Accept-Encoding");
  return accept != nullptr && std::strstr(accept, "gzip") != nullptr;
}

// ":9762" -> "9762"; "localhost:9762" -> "127.0.0.1:9762"; IPv4 and [IPv6] kept.
std::string CivetPort(const std::string& address) {
  if (!address.empty() && address[0] == ':') return address.substr(1);
  if (address.rfind("localhost:", 0) == 0) return "127.0.0.1" + address.substr(9);
  return address;
}

}  // namespace

Result<std::unique_ptr<WebServer>> WebServer::Start(const std::string& listen_address,
                                                    const std::string& telemetry_path,
                                                    Refresher& refresher) {
  static const bool initialised = (mg_init_library(0), true);
  (void)initialised;
  std::unique_ptr<WebServer> server(new WebServer(refresher, telemetry_path));
  std::string ports = CivetPort(listen_address);
  const char* options[] = {
      "listening_ports",    ports.c_str(), "num_threads", "16", "enable_keep_alive", "yes",
      "request_timeout_ms", "30000",       nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };  // ours log
  server->context_ = mg_start(&callbacks, nullptr, options);
  if (server->context_ == nullptr) {
    return Error{fmt::format("cannot listen on {} (address in use or not valid)", listen_address)};
  }
  mg_server_port port{};
  if (mg_get_server_ports(server->context_, 1, &port) > 0) server->port_ = port.port;
  mg_set_request_handler(server->context_, "/", &WebServer::Handle, server.get());
  return server;
}

WebServer::~WebServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int WebServer::Handle(mg_connection* connection, void* self) {
  // No exception may cross into civetweb.
  try {
    return static_cast<WebServer*>(self)->Serve(connection);
  } catch (const std::exception& e) {
    Send(connection, 500, "text/plain; charset=utf-8", "internal error\n");
    return 500;
  }
}

int WebServer::Serve(mg_connection* connection) {
  const mg_request_info* request = mg_get_request_info(connection);
  std::string path = request->local_uri ? request->local_uri : "/";
  std::string method = request->request_method ? request->request_method : "";
  std::shared_ptr<const Published> published = refresher_.Current();

  if (path == telemetry_path_) {
    if (AcceptsGzip(connection) && !published->metrics_gzip.empty()) {
      Send(connection, 200, kExpositionType, published->metrics_gzip,
           "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n");
    } else {
      Send(connection, 200, kExpositionType, published->metrics, "Vary: Accept-Encoding\r\n");
    }
    return 200;
  }
  if (path == "/-/healthy") {
    Send(connection, 200, "text/plain; charset=utf-8", "schedwatch is healthy.\n");
    return 200;
  }
  if (path == "/-/ready") {
    bool ready = refresher_.Ready();
    Send(connection, ready ? 200 : 503, "text/plain; charset=utf-8",
         ready ? "schedwatch is ready.\n" : "schedwatch is not ready: no complete refresh yet.\n");
    return ready ? 200 : 503;
  }
  if (path == "/-/reload") {
    if (method != "POST" && method != "PUT") {
      Send(connection, 405, "text/plain; charset=utf-8", "Only POST or PUT requests allowed\n",
           "Allow: POST, PUT\r\n");
      return 405;
    }
    auto reloaded = refresher_.Reload();
    if (!reloaded) {
      Send(connection, 500, "text/plain; charset=utf-8",
           "failed to reload config: " + reloaded.error() + "\n");
      return 500;
    }
    Send(connection, 200, "text/plain; charset=utf-8", "");
    return 200;
  }
  if (path == "/api/v1/status") {
    Send(connection, 200, "application/json", RenderStatusJson(published->result));
    return 200;
  }
  if (path == "/") {
    Send(connection, 200, "text/html; charset=utf-8", RenderStatusHtml(published->result));
    return 200;
  }
  Send(connection, 404, "text/plain; charset=utf-8", "404 page not found\n");
  return 404;
}

}  // namespace schedwatch
