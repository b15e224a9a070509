// Redis for the sidekiq_cron source: RESP replies parsed by hiredis's reader into bounded values
// (pure: tests and the fuzzer feed it fixture bytes), and a connection that sends pipelined
// commands and reads their replies within a deadline and a byte budget. Debian 12's hiredis 0.14
// has no TLS (hiredis_ssl came with 1.0) and no reader limits of its own: the bounds are ours.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/result.h"
#include "sources/sidekiq_cron/sidekiq_cron_descriptor.h"

struct redisContext;
struct redisReader;

namespace schedwatch::sidekiq_cron {

// One RESP value. Errors (`-ERR ...`) are values too: the caller decides.
struct RedisValue {
  enum class Type : std::uint8_t { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string text;  // kString, kStatus, kError
  std::int64_t integer = 0;
  std::vector<RedisValue> elements;  // kArray

  bool is_string() const { return type == Type::kString; }
  bool is_array() const { return type == Type::kArray; }
  bool is_error() const { return type == Type::kError; }
};

// What one reply may hold: a hostile or broken server answering `*2000000000` or a bulk string
// of gigabytes is refused at the bound, before the memory is taken.
struct ReplyBounds {
  std::size_t max_bytes = 64u << 20;     // RESP bytes of one reply
  std::size_t max_elements = 1'000'000;  // values in one reply, nested ones included
};

// A RESP reader: feed bytes, take whole replies. Not copyable (owns a hiredis reader).
class ReplyReader {
 public:
  explicit ReplyReader(ReplyBounds bounds = {});
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  // An Error once a reply passes the bounds or the bytes are not RESP; the reader is then done.
  Result<bool> Feed(std::string_view bytes);
  // The next whole reply, or nullopt while it is incomplete.
  Result<std::optional<RedisValue>> Next();
  // Bytes fed that no whole reply took yet.
  bool pending() const;

 private:
  ReplyBounds bounds_;
  redisReader* reader_ = nullptr;
  std::size_t reply_bytes_ = 0;     // fed since the last whole reply
  std::size_t reply_elements_ = 0;  // values made for the reply being read
  std::string error_;
};

// Every whole reply in `bytes` (fixtures, fuzzing); an Error when they pass the bounds, are not
// RESP or end inside a reply.
Result<std::vector<RedisValue>> ParseReplies(std::string_view bytes, ReplyBounds bounds = {});

// One connection, opened per read. Every error names the address, never the password.
class RedisConnection {
 public:
  static Result<std::unique_ptr<RedisConnection>> Open(const RedisAddress& address,
                                                       const std::string& password,
                                                       std::chrono::milliseconds timeout,
                                                       ReplyBounds bounds = {});
  ~RedisConnection();

  // Sends the commands at once and reads one reply each, within what is left of the timeout
  // given to Open. A reply that is an error (`-NOAUTH ...`) is returned as a value.
  Result<std::vector<RedisValue>> Pipeline(const std::vector<std::vector<std::string>>& commands);
  // RESP bytes received so far.
  std::uint64_t bytes_read() const { return bytes_read_; }

 private:
  RedisConnection() = default;
  Result<bool> Send(const std::string& bytes);

  redisContext* context_ = nullptr;
  std::string where_;
  std::chrono::steady_clock::time_point deadline_;
  ReplyBounds bounds_;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace schedwatch::sidekiq_cron
