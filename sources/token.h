// An API token from a file or an environment variable, for the sources that call an API
// (github_actions, gitlab). The file is re-read when it changes (a rotated token), never more
// than kMaxTokenBytes; the token is trimmed and must fit in one header line. Errors name the
// file or the variable, never the token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch {

inline constexpr std::size_t kMaxTokenBytes = 4096;

// `text` (a message worded from an answer, a few hundred bytes) with every run of
// kMinRedactedRun or more characters of `token` replaced by "[redacted]", whatever their case:
// a server that echoes the token split ("glpat-SECRET...SECRETSECRET123"), cut or upper-cased
// shows no part of it that would help guess it. A secret shorter than that is replaced where it
// stands whole. For the passwords of celery_beat's and sidekiq_cron's servers too.
inline constexpr std::size_t kMinRedactedRun = 8;
std::string RedactToken(std::string_view text, std::string_view token);

class TokenSource {
 public:
  // At most one of the two is set; neither: no token (an empty string).
  TokenSource(std::string file, std::string env) : file_(std::move(file)), env_(std::move(env)) {}

  const std::string& file() const { return file_; }
  const std::string& env() const { return env_; }
  bool configured() const { return !file_.empty() || !env_.empty(); }

  // The token now; an Error when the file or variable cannot be read or holds blanks or
  // control characters.
  Result<std::string> Load();

 private:
  struct FileStamp {
    std::int64_t inode = 0, size = 0, mtime_ns = 0;
    bool operator==(const FileStamp& other) const {
      return inode == other.inode && size == other.size && mtime_ns == other.mtime_ns;
    }
  };
  Result<std::string> Read();

  std::string file_, env_;
  std::string file_token_;  // the file's content, re-read when its stamp changes
  std::optional<FileStamp> stamp_;
};

}  // namespace schedwatch
