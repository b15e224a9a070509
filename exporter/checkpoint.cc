#include "exporter/checkpoint.h"

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

// A little of what the file said, printable, for a message.
std::string Quote(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c);
  }
  if (text.size() > 40) out += "...";
  return out;
}

}  // namespace

Result<std::optional<std::int64_t>> ParseCheckpoint(std::string_view text) {
  text = text.substr(0, text.find('\n'));
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return std::optional<std::int64_t>();
  text = text.substr(first, text.find_last_not_of(" \t\r") + 1 - first);
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::int64_t seconds = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error != std::errc() || end != text.data() + text.size() || seconds > kLastCheckpoint) {
      return Error{fmt::format("checkpoint \"{}\" is out of range (Unix seconds up to {})",
                               Quote(text), kLastCheckpoint)};
    }
    return std::optional<std::int64_t>(seconds);
  }
  auto time = ParseRfc3339(text);
  if (time && *time >= 0 && *time <= kLastCheckpoint) return std::optional<std::int64_t>(*time);
  return Error{fmt::format(
      "checkpoint \"{}\" is neither Unix seconds nor an RFC 3339 time from 1970 to 9999",
      Quote(text))};
}

Result<std::optional<std::int64_t>> ReadCheckpoint(const std::string& path) {
  platform::ReadFailure failure;
  auto text = platform::ReadRegularFile(path, kMaxCheckpointBytes, nullptr, &failure);
  if (!text) {
    if (failure == platform::ReadFailure::kNotFound) return std::optional<std::int64_t>();
    return Error{text.error()};
  }
  auto parsed = ParseCheckpoint(*text);
  if (!parsed) return Error{fmt::format("{}: {}", path, parsed.error())};
  if (*parsed) return parsed;
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return std::optional<std::int64_t>();  // gone meanwhile
  return std::optional<std::int64_t>(static_cast<std::int64_t>(info.st_mtime));
}

}  // namespace schedwatch
