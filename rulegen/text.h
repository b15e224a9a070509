// Quoting and small formatting helpers shared by the rule generator's outputs. Everything that
// comes from the spec or the command line passes through these before it lands in YAML or PromQL.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/selector.h"

namespace schedwatch::rulegen {

// fmt::format_to(std::back_inserter(out), ...) resizes `out` with zeros before it copies; this
// formats into a stack buffer and appends once. The outputs for 10,000 roles are tens of MiB.
template <typename... Args>
void AppendFormat(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::memory_buffer buffer;
  fmt::format_to(fmt::appender(buffer), format, std::forward<Args>(args)...);
  out.append(buffer.data(), buffer.size());
}

// One YAML scalar, quoted only when it has to be: plain for identifiers and durations,
// single-quoted for printable text, double-quoted with escapes otherwise. The result always
// reads back as the same string (never as a number, boolean or null).
std::string YamlScalar(std::string_view text);
// The same, appended to `out` (the large outputs call this for every line).
void AppendYamlScalar(std::string& out, std::string_view text);

// A PromQL string literal: "value" with \ " and control characters escaped.
std::string PromString(std::string_view text);

// Escapes RE2 metacharacters so that `text` matches only itself inside a regex matcher.
std::string RegexQuote(std::string_view text);

// Prometheus' `humanizeDuration` template function for whole seconds: 3700 -> "1h 1m 40s".
std::string HumanizeDuration(std::int64_t seconds);

// Expands the few template actions the generated annotations use: {{ $labels.NAME }},
// {{ $value }} and {{ $value | humanizeDuration }}. Used to write the expected annotations of
// the generated promtool tests, and (without a value, leaving the $value actions in place) to
// name the role in rules whose expression has no role label. Any other action is a programming
// error (std::logic_error).
std::string ExpandAnnotation(std::string_view text,
                             const std::map<std::string, std::string>& labels,
                             std::optional<std::int64_t> value);

// A concrete series (promtool input notation) that the selector matches, or nullopt when the
// matchers cannot be satisfied by construction (a =~ that is not a list of literal words).
std::optional<std::string> ExampleSeries(const Selector& selector);

}  // namespace schedwatch::rulegen
