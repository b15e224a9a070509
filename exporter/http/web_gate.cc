// The gate a request passes before it is served: framing, client certificate, password and
// rate limit, and where a reload may come from.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <cstring>
#include <set>

#include "exporter/http/web_server.h"
#include "exporter/http/web_text.h"
#include "exporter/http/web_tls.h"

namespace schedwatch {
namespace {

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

}  // namespace

std::optional<Reply> WebServer::Impl::CheckClientCertificate(MHD_Connection* connection) {
  if (!options_.web_config || !options_.web_config->tls) return std::nullopt;
  auto refusal = ClientCertificateRefusal(connection, options_.web_config->tls->client_auth_type);
  if (!refusal) return std::nullopt;
  return Text(403, *refusal);
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

}  // namespace schedwatch
