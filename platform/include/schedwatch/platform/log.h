// One line per event, logfmt (`level=warn source=prod msg="list failed" err="..."`) or JSON.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace schedwatch {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

struct LogField {
  std::string_view key;
  std::string value;
};

void ConfigureLog(LogLevel level, bool json);
bool ParseLogLevel(std::string_view text, LogLevel& level);
void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});

}  // namespace schedwatch
