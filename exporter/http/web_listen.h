// Listening sockets for --web.listen-address in Prometheus form (":9762", "127.0.0.1:9762",
// "[::1]:9762", "[::]:9762", "localhost:9762").
#pragma once

#include <string>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

// A listening, non-blocking socket for `text`; `port` receives the bound port.
Result<int> Listen(const std::string& text, int& port);

// --web.systemd-socket: the sockets systemd passed (LISTEN_FDS for this LISTEN_PID), each
// checked to be a listening TCP socket (IPv4 or IPv6) and made non-blocking and close-on-exec.
// An error when none was passed or one is of another kind; the LISTEN_* variables are unset
// either way, so no child takes them for its own.
struct PassedSocket {
  int fd = -1;
  std::string address;  // "systemd socket fd 3 (127.0.0.1:9762)"
  int port = 0;
};
Result<std::vector<PassedSocket>> SystemdSockets();

}  // namespace schedwatch
