#include "schedwatch/platform/log.h"

#include <date/date.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

namespace schedwatch {
namespace {

LogLevel g_level = LogLevel::kInfo;
bool g_json = false;
std::mutex g_mutex;

constexpr std::string_view kLevelNames[] = {"debug", "info", "warn", "error"};

std::string Quote(std::string_view value) {
  bool plain = !value.empty() && value.find_first_of(" \"=\\\n\t") == std::string_view::npos;
  if (plain) return std::string(value);
  return nlohmann::json(std::string(value))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void ConfigureLog(LogLevel level, bool json) {
  g_level = level;
  g_json = json;
}

bool ParseLogLevel(std::string_view text, LogLevel& level) {
  for (int i = 0; i < 4; ++i) {
    if (text == kLevelNames[i]) {
      level = static_cast<LogLevel>(i);
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  if (level < g_level) return;
  auto now = date::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  std::string ts = date::format("%FT%TZ", now);
  std::string_view level_name = kLevelNames[static_cast<int>(level)];
  std::string line;
  if (g_json) {
    nlohmann::json object{{"ts", ts}, {"level", level_name}, {"msg", message}};
    for (const auto& field : fields) object[std::string(field.key)] = field.value;
    line = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = fmt::format("ts={} level={} msg={}", ts, level_name, Quote(message));
    for (const auto& field : fields) line += fmt::format(" {}={}", field.key, Quote(field.value));
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace schedwatch
