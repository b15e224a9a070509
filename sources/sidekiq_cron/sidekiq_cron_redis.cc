#include "sources/sidekiq_cron/sidekiq_cron_redis.h"

#include <errno.h>
#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

#include "sources/token.h"

namespace schedwatch::sidekiq_cron {
namespace {

// The reply being built, for hiredis's callbacks (which get no context of ours in 0.14).
struct Building {
  std::size_t* elements = nullptr;
  std::size_t max_elements = 0;
};
thread_local Building building;

bool Count(std::size_t n) {
  if (n > building.max_elements || *building.elements > building.max_elements - n) return false;
  *building.elements += n;
  return true;
}

// The value a task fills: its slot in the parent array, or a new root.
RedisValue* Slot(const redisReadTask* task) {
  if (task->parent != nullptr) {
    auto* parent = static_cast<RedisValue*>(task->parent->obj);
    return &parent->elements[static_cast<std::size_t>(task->idx)];
  }
  return new RedisValue();
}

void* CreateString(const redisReadTask* task, char* text, std::size_t length) {
  if (!Count(1)) return nullptr;
  RedisValue* value = Slot(task);
  value->type = task->type == REDIS_REPLY_ERROR    ? RedisValue::Type::kError
                : task->type == REDIS_REPLY_STATUS ? RedisValue::Type::kStatus
                                                   : RedisValue::Type::kString;
  value->text.assign(text, length);
  return value;
}

void* CreateArray(const redisReadTask* task, int elements) {
  // Counted before the vector is made: `*2000000000` takes no memory.
  if (elements < 0 || !Count(1 + static_cast<std::size_t>(elements))) return nullptr;
  RedisValue* value = Slot(task);
  value->type = RedisValue::Type::kArray;
  value->elements.resize(static_cast<std::size_t>(elements));
  return value;
}

void* CreateInteger(const redisReadTask* task, long long integer) {
  if (!Count(1)) return nullptr;
  RedisValue* value = Slot(task);
  value->type = RedisValue::Type::kInteger;
  value->integer = integer;
  return value;
}

void* CreateNil(const redisReadTask* task) {
  if (!Count(1)) return nullptr;
  RedisValue* value = Slot(task);
  value->type = RedisValue::Type::kNil;
  return value;
}

// hiredis frees only a root (children live in their parent's vector).
void FreeObject(void* object) { delete static_cast<RedisValue*>(object); }

redisReplyObjectFunctions kFunctions{CreateString, CreateArray, CreateInteger, CreateNil,
                                     FreeObject};

}  // namespace

ReplyReader::ReplyReader(ReplyBounds bounds)
    : bounds_(bounds), reader_(redisReaderCreateWithFunctions(&kFunctions)) {}

ReplyReader::~ReplyReader() {
  if (reader_ != nullptr) redisReaderFree(reader_);
}

Result<bool> ReplyReader::Feed(std::string_view bytes) {
  if (!error_.empty()) return Error{error_};
  if (reader_ == nullptr) return Error{"out of memory"};
  reply_bytes_ += bytes.size();
  if (reply_bytes_ > bounds_.max_bytes) {
    error_ = fmt::format("a reply longer than {} bytes", bounds_.max_bytes);
    return Error{error_};
  }
  if (redisReaderFeed(reader_, bytes.data(), bytes.size()) != REDIS_OK) {
    error_ = fmt::format("unreadable reply: {}", reader_->errstr);
    return Error{error_};
  }
  return true;
}

Result<std::optional<RedisValue>> ReplyReader::Next() {
  if (!error_.empty()) return Error{error_};
  void* reply = nullptr;
  building = {&reply_elements_, bounds_.max_elements};
  const int status = redisReaderGetReply(reader_, &reply);
  building = {};
  if (status != REDIS_OK) {
    // A callback's refusal reads as hiredis's "Out of memory".
    error_ = reply_elements_ >= bounds_.max_elements || std::strstr(reader_->errstr, "memory")
                 ? fmt::format("a reply of more than {} values", bounds_.max_elements)
                 : fmt::format("unreadable reply: {}", reader_->errstr);
    return Error{error_};
  }
  if (reply == nullptr) return std::optional<RedisValue>();
  std::unique_ptr<RedisValue> value(static_cast<RedisValue*>(reply));
  // What is still buffered belongs to the next replies.
  reply_bytes_ = reader_->len - reader_->pos;
  reply_elements_ = 0;
  return std::optional<RedisValue>(std::move(*value));
}

Result<std::vector<RedisValue>> ParseReplies(std::string_view bytes, ReplyBounds bounds) {
  ReplyReader reader(bounds);
  std::vector<RedisValue> replies;
  // Fed in pieces, as a socket delivers them.
  constexpr std::size_t kPiece = 16 * 1024;
  for (std::size_t at = 0; at < bytes.size() || at == 0; at += kPiece) {
    auto fed = reader.Feed(bytes.substr(at, kPiece));
    if (!fed) return Error{fed.error()};
    while (true) {
      auto next = reader.Next();
      if (!next) return Error{next.error()};
      if (!*next) break;
      replies.push_back(std::move(**next));
    }
    if (bytes.empty()) break;
  }
  if (reader.pending()) return Error{"the bytes end inside a reply"};
  return replies;
}

bool ReplyReader::pending() const {
  // Unread bytes, or the root of a reply whose elements have not all come.
  return reader_ != nullptr && (reader_->len > reader_->pos || reader_->reply != nullptr);
}

Result<std::unique_ptr<RedisConnection>> RedisConnection::Open(const RedisAddress& address,
                                                               const std::string& password,
                                                               std::chrono::milliseconds timeout,
                                                               ReplyBounds bounds) {
  std::unique_ptr<RedisConnection> connection(new RedisConnection());
  connection->where_ =
      address.socket.empty() ? fmt::format("{}:{}", address.host, address.port) : address.socket;
  connection->bounds_ = bounds;
  connection->deadline_ = std::chrono::steady_clock::now() + timeout;
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  const timeval tv{static_cast<time_t>(micros / 1000000),
                   static_cast<suseconds_t>(micros % 1000000)};
  connection->context_ = address.socket.empty()
                             ? redisConnectWithTimeout(address.host.c_str(), address.port, tv)
                             : redisConnectUnixWithTimeout(address.socket.c_str(), tv);
  if (connection->context_ == nullptr) return Error{"out of memory"};
  if (connection->context_->err != 0) {
    return Error{
        fmt::format("connect to {}: {}", connection->where_, connection->context_->errstr)};
  }
  std::vector<std::vector<std::string>> hello;
  if (!password.empty()) hello.push_back({"AUTH", password});
  if (address.db != 0) hello.push_back({"SELECT", std::to_string(address.db)});
  if (hello.empty()) return connection;
  auto replies = connection->Pipeline(hello);
  if (!replies) return Error{replies.error()};
  for (std::size_t i = 0; i < replies->size(); ++i) {
    const RedisValue& reply = (*replies)[i];
    if (reply.is_error()) {
      // Redis's own words ("WRONGPASS invalid username-password pair"), never the password.
      std::string text = RedactToken(reply.text.substr(0, 200), password);
      return Error{fmt::format("{} on {}: {}", hello[i][0], connection->where_, text)};
    }
  }
  return connection;
}

RedisConnection::~RedisConnection() {
  if (context_ != nullptr) redisFree(context_);
}

namespace {

// Milliseconds left before `deadline`, at least 0.
int Left(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

Result<bool> RedisConnection::Send(const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd fd{context_->fd, POLLOUT, 0};
    int ready = poll(&fd, 1, Left(deadline_));
    if (ready == 0) return Error{fmt::format("{}: timed out sending", where_)};
    if (ready < 0 && errno == EINTR) continue;
    ssize_t n = write(context_->fd, bytes.data() + sent, bytes.size() - sent);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Error{fmt::format("{}: send: {}", where_, std::strerror(errno))};
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

Result<std::vector<RedisValue>> RedisConnection::Pipeline(
    const std::vector<std::vector<std::string>>& commands) {
  std::string out;
  for (const auto& command : commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& arg : command) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    char* formatted = nullptr;
    int length = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), argv.data(),
                                        lengths.data());
    if (length < 0) return Error{"out of memory"};
    out.append(formatted, static_cast<std::size_t>(length));
    redisFreeCommand(formatted);
  }
  auto sent = Send(out);
  if (!sent) return Error{sent.error()};
  std::vector<RedisValue> replies;
  ReplyReader reader(bounds_);
  char buffer[64 * 1024];
  while (replies.size() < commands.size()) {
    auto next = reader.Next();
    if (!next) return Error{fmt::format("{}: {}", where_, next.error())};
    if (*next) {
      replies.push_back(std::move(**next));
      continue;
    }
    pollfd fd{context_->fd, POLLIN, 0};
    int ready = poll(&fd, 1, Left(deadline_));
    if (ready == 0) {
      return Error{fmt::format("{}: no whole answer within the timeout ({} of {} replies)", where_,
                               replies.size(), commands.size())};
    }
    if (ready < 0 && errno == EINTR) continue;
    ssize_t n = read(context_->fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Error{fmt::format("{}: read: {}", where_, std::strerror(errno))};
    if (n == 0) return Error{fmt::format("{}: the server closed the connection", where_)};
    bytes_read_ += static_cast<std::uint64_t>(n);
    auto fed = reader.Feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (!fed) return Error{fmt::format("{}: {}", where_, fed.error())};
  }
  return replies;
}

}  // namespace schedwatch::sidekiq_cron
