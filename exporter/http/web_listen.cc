#include "exporter/http/web_listen.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "exporter/http/web.h"
#include "exporter/http/web_text.h"

namespace schedwatch {
namespace {

struct Address {
  std::string host;  // empty: every address
  std::string port;
};

Result<Address> SplitHostPort(const std::string& text) {
  Address address;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Error{"expected [IPv6]:port"};
    }
    address.host = text.substr(1, close - 1);
    if (address.host.empty()) return Error{"empty IPv6 address"};
    address.port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) return Error{"missing port (host:port, :port or [IPv6]:port)"};
    address.host = text.substr(0, colon);
    if (address.host.find(':') != std::string::npos) {
      return Error{"an IPv6 address goes in brackets: [::1]:9762"};
    }
    address.port = text.substr(colon + 1);
  }
  if (address.port.empty() || address.port.size() > 5 ||
      address.port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(address.port) > 65535) {
    return Error{fmt::format("port \"{}\" is not a number from 0 to 65535", address.port)};
  }
  return address;
}

}  // namespace

// A listening socket for `text`; `port` receives the bound port.
Result<int> Listen(const std::string& text, int& port) {
  auto address = SplitHostPort(text);
  if (!address) return Error{fmt::format("cannot listen on {}: {}", text, address.error())};
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  std::string host = address->host;
  bool every_address = host.empty() || host == "::";
  if (Lower(host) == "localhost") host = "127.0.0.1";
  if (host.empty()) host = "::";
  addrinfo* found = nullptr;
  int resolved = getaddrinfo(host.c_str(), address->port.c_str(), &hints, &found);
  if (resolved != 0) {
    return Error{fmt::format("cannot listen on {}: {}", text, gai_strerror(resolved))};
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, &freeaddrinfo);
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0 && every_address && errno == EAFNOSUPPORT) {
    // No IPv6 on this machine: every IPv4 address then.
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(static_cast<std::uint16_t>(std::stoi(address->port)));
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
      int on = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
      if (bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0) {
        int error = errno;
        close(fd);
        return Error{fmt::format("cannot listen on {}: {}", text, std::strerror(error))};
      }
    }
  } else if (fd >= 0) {
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (found->ai_family == AF_INET6) {
      int v6only = every_address ? 0 : 1;  // ":port" and "[::]:port" take IPv4 too
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    }
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      int error = errno;
      close(fd);
      return Error{fmt::format("cannot listen on {}: {}", text, std::strerror(error))};
    }
  }
  if (fd < 0) return Error{fmt::format("cannot listen on {}: {}", text, std::strerror(errno))};
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    int error = errno;
    close(fd);
    return Error{fmt::format("cannot listen on {}: {}", text, std::strerror(error))};
  }
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

Result<std::vector<PassedSocket>> SystemdSockets() {
  int count = sd_listen_fds(1);
  if (count < 0) {
    return Error{fmt::format("--web.systemd-socket: cannot read the sockets systemd passed: {}",
                             std::strerror(-count))};
  }
  if (count == 0) {
    return Error{
        "--web.systemd-socket: systemd passed no socket (LISTEN_FDS is unset, or set for another "
        "process); start the service through its socket unit (systemctl start "
        "schedwatch-exporter.socket), or leave the flag out and use --web.listen-address"};
  }
  std::vector<PassedSocket> sockets;
  for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + count; ++fd) {
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    bool ip = getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0 &&
              (bound.ss_family == AF_INET || bound.ss_family == AF_INET6);
    if (sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0 || !ip) {
      for (const auto& socket : sockets) close(socket.fd);
      return Error{fmt::format(
          "--web.systemd-socket: fd {} from systemd is not a listening TCP socket (the socket "
          "unit needs ListenStream= with a port or address:port)",
          fd)};
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    char host[INET6_ADDRSTRLEN] = "";
    int port = 0;
    if (bound.ss_family == AF_INET) {
      auto* address = reinterpret_cast<sockaddr_in*>(&bound);
      inet_ntop(AF_INET, &address->sin_addr, host, sizeof(host));
      port = ntohs(address->sin_port);
    } else {
      auto* address = reinterpret_cast<sockaddr_in6*>(&bound);
      inet_ntop(AF_INET6, &address->sin6_addr, host, sizeof(host));
      port = ntohs(address->sin6_port);
    }
    bool v6 = bound.ss_family == AF_INET6;
    sockets.push_back({fd,
                       fmt::format("systemd socket fd {} ({}{}{}:{})", fd, v6 ? "[" : "", host,
                                   v6 ? "]" : "", port),
                       port});
  }
  return sockets;
}

std::size_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<std::size_t>(limit.rlim_cur);
}

}  // namespace schedwatch
