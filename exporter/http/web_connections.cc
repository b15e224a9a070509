#include "exporter/http/web_connections.h"

#include <sys/socket.h>

namespace schedwatch {
namespace {

constexpr int kSendBufferBytes = 128 * 1024;

}  // namespace

ConnectionGuard::ConnectionGuard(std::chrono::milliseconds read_header_timeout,
                                 std::chrono::milliseconds idle_timeout)
    : read_header_timeout_(read_header_timeout),
      idle_timeout_(idle_timeout),
      sweeper_([this] { Sweep(); }) {}

ConnectionGuard::~ConnectionGuard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  sweeper_.join();
}

void ConnectionGuard::Started(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (info == nullptr) return;
  // A bounded send buffer (the kernel doubles it): Linux would grow it to 4 MiB per
  // connection, kernel memory a container is charged for, and a slow reader would then drain
  // it for longer than the idle timeout between two writes, which closes the connection with
  // the answer cut short.
  int send_buffer = kSendBufferBytes;
  setsockopt(info->connect_fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof(send_buffer));
  State state;
  state.fd = info->connect_fd;
  state.deadline = Clock::now() + read_header_timeout_;
  std::lock_guard<std::mutex> lock(mutex_);
  connections_[connection] = state;
}

void ConnectionGuard::Closed(MHD_Connection* connection) {
  // libmicrohttpd reports the close before it closes the descriptor: once erased here, the
  // sweeper can never shut down a descriptor number that a new connection reuses.
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(connection);
}

void ConnectionGuard::Set(MHD_Connection* connection, Clock::time_point deadline,
                          bool from_request_line) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  // The first request's deadline runs from the accept: a request line does not extend it.
  if (from_request_line && it->second.first_request) return;
  it->second.deadline = deadline;
}

void ConnectionGuard::RequestLine(MHD_Connection* connection) {
  Set(connection, Clock::now() + read_header_timeout_, true);
}

void ConnectionGuard::RequestRead(MHD_Connection* connection) {
  Set(connection, Clock::time_point::max(), false);
}

void ConnectionGuard::RequestDone(MHD_Connection* connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  it->second.first_request = false;
  it->second.deadline = Clock::now() + idle_timeout_ + read_header_timeout_;
}

void ConnectionGuard::Sweep() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    auto now = Clock::now();
    for (auto& [connection, state] : connections_) {
      if (state.shut || state.deadline > now) continue;
      // shutdown, not close: the descriptor stays libmicrohttpd's until it reports the close.
      shutdown(state.fd, SHUT_RDWR);
      state.shut = true;
      timed_out_.fetch_add(1);
    }
  }
}

}  // namespace schedwatch
