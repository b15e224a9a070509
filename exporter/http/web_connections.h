// Deadlines libmicrohttpd does not keep. Its connection timeout is an idle timeout: a client
// that sends one header byte every few seconds, or a body one byte at a time, is never idle
// and holds its connection for ever. The guard gives each request a deadline instead: the whole
// request (request line, headers and body) within the read-header timeout of the accept (first
// request) or of its request line (later requests on a kept-alive connection), and the next
// request line within the idle timeout of the last answer. A sweeper thread shuts down (never
// closes) the socket of a connection past its deadline; libmicrohttpd then sees the end of the
// stream and closes it as its own. It also bounds each connection's send buffer.
#pragma once

#include <microhttpd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace schedwatch {

class ConnectionGuard {
 public:
  ConnectionGuard(std::chrono::milliseconds read_header_timeout,
                  std::chrono::milliseconds idle_timeout);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // From MHD_OPTION_NOTIFY_CONNECTION.
  void Started(MHD_Connection* connection);
  void Closed(MHD_Connection* connection);
  // The request line was read (MHD_OPTION_URI_LOG_CALLBACK).
  void RequestLine(MHD_Connection* connection);
  // The whole request was read: no deadline while it is answered (a suspended connection
  // waits for its page or password check; an answer is sent at the client's pace).
  void RequestRead(MHD_Connection* connection);
  // The answer was sent (MHD_OPTION_NOTIFY_COMPLETED): the next request line is due.
  void RequestDone(MHD_Connection* connection);

  // Connections shut down for missing their deadline.
  std::uint64_t timed_out() const { return timed_out_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct State {
    int fd = -1;
    Clock::time_point deadline = Clock::time_point::max();
    bool first_request = true;
    bool shut = false;
  };
  void Set(MHD_Connection* connection, Clock::time_point deadline, bool from_request_line);
  void Sweep();

  const std::chrono::milliseconds read_header_timeout_, idle_timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::unordered_map<MHD_Connection*, State> connections_;
  std::atomic<std::uint64_t> timed_out_{0};
  std::thread sweeper_;
};

}  // namespace schedwatch
