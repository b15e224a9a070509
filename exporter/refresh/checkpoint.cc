#include "exporter/refresh/checkpoint.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "schedwatch/platform/file.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

// 9999-12-31T23:59:59Z: the last second RFC 3339 can write.
constexpr std::int64_t kLastCheckpoint = 253402300799;

// Where the first line went wrong, for a message that never quotes it: a checkpoint may be a
// link to a file the job's user could not read, and its text anything.
std::string Position(std::string_view line, std::size_t column) {
  return fmt::format("line 1 ({} bytes), column {}", line.size(), column + 1);
}

}  // namespace

Result<std::optional<std::int64_t>> ParseCheckpoint(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  auto first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return std::optional<std::int64_t>();
  text = line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::int64_t seconds = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error != std::errc() || end != text.data() + text.size() || seconds > kLastCheckpoint) {
      return Error{
          fmt::format("checkpoint at {}: a number of {} digits, out of range (Unix "
                      "seconds up to {})",
                      Position(line, first), text.size(), kLastCheckpoint)};
    }
    return std::optional<std::int64_t>(seconds);
  }
  auto time = ParseRfc3339(text);
  if (time && *time >= 0 && *time <= kLastCheckpoint) return std::optional<std::int64_t>(*time);
  return Error{fmt::format(
      "checkpoint at {}: neither Unix seconds nor an RFC 3339 time from 1970 to 9999 (the text is "
      "not shown)",
      Position(line, first))};
}

Result<std::optional<std::int64_t>> ReadCheckpoint(const std::string& path) {
  // The job's user writes it, in a directory it may write: no link of theirs is followed.
  platform::ReadFailure failure;
  auto fd = platform::OpenGuarded(path, platform::OpenKind::kRegularFile, &failure);
  if (!fd) {
    if (failure == platform::ReadFailure::kNotFound) return std::optional<std::int64_t>();
    return Error{fd.error()};
  }
  auto text = platform::ReadRegularFd(fd->get(), path, kMaxCheckpointBytes);
  if (!text) return Error{text.error()};
  auto parsed = ParseCheckpoint(*text);
  if (!parsed) return Error{fmt::format("{}: {}", path, parsed.error())};
  if (*parsed) return parsed;
  struct stat info {};
  if (fstat(fd->get(), &info) != 0) return std::optional<std::int64_t>();
  return std::optional<std::int64_t>(static_cast<std::int64_t>(info.st_mtime));
}

}  // namespace schedwatch
