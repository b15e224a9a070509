// Listening sockets for --web.listen-address in Prometheus form (":9762", "127.0.0.1:9762",
// "[::1]:9762", "[::]:9762", "localhost:9762").
#pragma once

#include <string>

#include "schedwatch/result.h"

namespace schedwatch {

// A listening, non-blocking socket for `text`; `port` receives the bound port.
Result<int> Listen(const std::string& text, int& port);

}  // namespace schedwatch
