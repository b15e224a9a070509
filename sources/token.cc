#include "sources/token.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

std::string Trim(std::string text) {
  text.erase(0, text.find_first_not_of(" \t\r\n"));
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  return text;
}

bool HeaderSafe(const std::string& token) {
  return std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

}  // namespace

std::string RedactToken(std::string_view text, std::string_view token) {
  if (token.empty()) return std::string(text);
  std::string lower_token(token.size(), ' ');
  std::transform(token.begin(), token.end(), lower_token.begin(), Lower);
  if (token.size() < kMinRedactedRun) {
    // A short secret (a database or Redis password) has no pieces worth hiding: it is hidden
    // where it stands whole.
    std::string lower_text(text.size(), ' ');
    std::transform(text.begin(), text.end(), lower_text.begin(), Lower);
    std::string redacted;
    std::size_t from = 0;
    for (std::size_t at; (at = lower_text.find(lower_token, from)) != std::string::npos;) {
      redacted.append(text.substr(from, at - from)).append("[redacted]");
      from = at + token.size();
    }
    return redacted.append(text.substr(from));
  }
  if (text.size() < kMinRedactedRun) return std::string(text);
  // Marks the bytes of every kMinRedactedRun-long window that is a piece of the token; a
  // longer run is windows that overlap. Quadratic, on a message of a few hundred bytes.
  std::vector<bool> secret(text.size(), false);
  std::string window(kMinRedactedRun, ' ');
  for (std::size_t at = 0; at + kMinRedactedRun <= text.size(); ++at) {
    std::transform(text.begin() + at, text.begin() + at + kMinRedactedRun, window.begin(), Lower);
    if (lower_token.find(window) == std::string::npos) continue;
    std::fill(secret.begin() + at, secret.begin() + at + kMinRedactedRun, true);
  }
  std::string redacted;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (!secret[at]) {
      redacted += text[at];
    } else if (at == 0 || !secret[at - 1]) {
      redacted += "[redacted]";
    }
  }
  return redacted;
}

Result<std::string> TokenSource::Load() {
  auto token = Read();
  if (token && !HeaderSafe(*token)) {
    return Error{"the token holds blanks or control characters; it must be one line"};
  }
  return token;
}

Result<std::string> TokenSource::Read() {
  if (!env_.empty()) {
    const char* value = std::getenv(env_.c_str());
    if (value == nullptr || *value == '\0') {
      return Error{fmt::format("environment variable {} (token_env) is not set", env_)};
    }
    return Trim(value);
  }
  if (file_.empty()) return std::string();
  struct stat info {};
  if (stat(file_.c_str(), &info) != 0) {
    return Error{fmt::format("cannot read token file {}: {}", file_, std::strerror(errno))};
  }
  FileStamp stamp{
      static_cast<std::int64_t>(info.st_ino), static_cast<std::int64_t>(info.st_size),
      static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
  if (stamp_ && *stamp_ == stamp) return file_token_;
  if (info.st_size > static_cast<off_t>(kMaxTokenBytes)) {
    return Error{fmt::format("token file {} is larger than {} bytes", file_, kMaxTokenBytes)};
  }
  auto text = platform::ReadRegularFile(file_, kMaxTokenBytes);
  if (!text) return Error{"token file: " + text.error()};
  if (stamp_) Log(LogLevel::kInfo, "token file changed, re-read", {{"file", file_}});
  stamp_ = stamp;
  file_token_ = Trim(*text);
  return file_token_;
}

}  // namespace schedwatch
