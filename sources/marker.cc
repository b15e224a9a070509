#include "sources/marker.h"

#include <fmt/format.h>

#include "sources/crontab/crontab_file.h"  // the UTF-8 checks markers share with crontab lines

namespace schedwatch {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view SkipBlanks(std::string_view text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  return text;
}

}  // namespace

std::optional<Result<Marker>> ParseMarker(std::string_view text) {
  text = SkipBlanks(text);
  constexpr std::string_view kPrefix = "schedwatch:";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  Marker marker;
  while (!(text = SkipBlanks(text)).empty()) {
    std::size_t end = 0;
    while (end < text.size() && !IsBlank(text[end])) ++end;
    std::string_view token = text.substr(0, end);
    text.remove_prefix(end);
    std::size_t equals = token.find('=');
    std::string_view key = token.substr(0, equals);
    std::string_view value = equals == std::string_view::npos ? "" : token.substr(equals + 1);
    bool printable = crontab::FirstInvalidUtf8Line(value) == 0;
    for (char c : value)
      printable = printable && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    if (value.empty() || !printable) {
      return Result<Marker>(
          Error{fmt::format("marker item \"{}\" is not key=value with a printable "
                            "value",
                            crontab::SanitizeUtf8(token.substr(0, 64)))});
    }
    if (key == "role") {
      marker.role = value;
    } else if (key == "spec_version") {
      marker.spec_version = value;
    } else {
      return Result<Marker>(Error{fmt::format("unknown marker key \"{}\" (role, spec_version)",
                                              crontab::SanitizeUtf8(key.substr(0, 64)))});
    }
  }
  if (marker.role.empty()) return Result<Marker>(Error{"marker has no role=..."});
  return Result<Marker>(marker);
}

std::string FormatMarker(const Marker& marker) {
  std::string text = "schedwatch: role=" + marker.role;
  if (!marker.spec_version.empty()) text += " spec_version=" + marker.spec_version;
  return text;
}

std::optional<Result<Marker>> DescriptionMarker(std::string_view description) {
  constexpr std::string_view kPrefix = "schedwatch:";
  std::size_t at = description.find(kPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view marker = description.substr(at);
  // "[schedwatch: ...]" inside a longer description ends at its bracket.
  if (at > 0 && description[at - 1] == '[') {
    std::size_t close = marker.find(']');
    if (close == std::string_view::npos) {
      return Result<Marker>(Error{"marker \"[schedwatch: ...\" has no closing ']'"});
    }
    marker = marker.substr(0, close);
  }
  return ParseMarker(marker);
}

std::string DescriptionWithMarker(std::string_view text, const Marker& marker) {
  std::string description(text);
  if (!description.empty()) description += ' ';
  return description + "[" + FormatMarker(marker) + "]";
}

namespace {

std::string Trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

}  // namespace

std::string DescriptionWithoutMarker(const std::string& description) {
  std::size_t at = description.find("schedwatch:");
  if (at == std::string::npos) return Trimmed(description);
  if (at > 0 && description[at - 1] == '[') {
    std::size_t close = description.find(']', at);
    std::string rest = close == std::string::npos ? "" : description.substr(close + 1);
    return Trimmed(description.substr(0, at - 1) + rest);
  }
  return Trimmed(description.substr(0, at));
}

}  // namespace schedwatch
