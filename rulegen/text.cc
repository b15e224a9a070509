#include "rulegen/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace schedwatch::rulegen {
namespace {

bool IsIdentifierStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentifierChar(char c) {
  return IsIdentifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

// Words YAML 1.1 (go-yaml, which Prometheus uses) reads as booleans or null.
bool IsYamlKeyword(std::string_view text) {
  static constexpr std::array<std::string_view, 9> kKeywords = {"true", "false", "yes", "no",  "on",
                                                                "off",  "y",     "n",   "null"};
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::find(kKeywords.begin(), kKeywords.end(), lower) != kKeywords.end();
}

bool IsPlainSafe(std::string_view text) {
  if (IsIdentifierStart(text[0])) {
    return std::all_of(
               text.begin(), text.end(),
               [](char c) { return IsIdentifierChar(c) || c == '.' || c == '/' || c == '-'; }) &&
           (text.size() > 5 || !IsYamlKeyword(text));
  }
  // Durations such as 5m or 1h30m: digits and unit letters, never a YAML number.
  return std::isdigit(static_cast<unsigned char>(text[0])) &&
         text.find_first_not_of("0123456789ywdhms") == std::string_view::npos &&
         text.find_first_not_of("0123456789") != std::string_view::npos;
}

constexpr std::string_view kRegexMeta = "\\.+*?()|[]{}^$";

}  // namespace

void AppendYamlScalar(std::string& out, std::string_view text) {
  if (text.empty()) {
    out += "''";
  } else if (IsPlainSafe(text)) {
    out += text;
  } else if (std::all_of(text.begin(), text.end(), [](char c) {
               auto byte = static_cast<unsigned char>(c);
               return byte >= 0x20 && byte != 0x7f;
             })) {
    out += '\'';
    for (std::size_t start = 0;;) {
      std::size_t quote = text.find('\'', start);
      out += text.substr(start, quote - start);
      if (quote == std::string_view::npos) break;
      out += "''";  // a quote is written twice
      start = quote + 1;
    }
    out += '\'';
  } else {
    // JSON string escapes are valid in YAML double-quoted scalars.
    out += nlohmann::json(std::string(text))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

std::string YamlScalar(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  AppendYamlScalar(out, text);
  return out;
}

std::string PromString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string RegexQuote(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (kRegexMeta.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string HumanizeDuration(std::int64_t seconds) {
  if (seconds == 0) return "0s";
  std::string sign = seconds < 0 ? "-" : "";
  std::int64_t v = seconds < 0 ? -seconds : seconds;
  std::int64_t s = v % 60, m = v / 60 % 60, h = v / 3600 % 24, d = v / 86400;
  if (d != 0) return fmt::format("{}{}d {}h {}m {}s", sign, d, h, m, s);
  if (h != 0) return fmt::format("{}{}h {}m {}s", sign, h, m, s);
  if (m != 0) return fmt::format("{}{}m {}s", sign, m, s);
  return fmt::format("{}{}s", sign, s);
}

std::string ExpandAnnotation(std::string_view text,
                             const std::map<std::string, std::string>& labels,
                             std::optional<std::int64_t> value) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) break;
    std::size_t close = text.find("}}", open);
    if (close == std::string_view::npos) throw std::logic_error("unterminated template action");
    out.append(text.substr(pos, open - pos));
    std::string_view action = text.substr(open + 2, close - open - 2);
    action.remove_prefix(std::min(action.find_first_not_of(' '), action.size()));
    action.remove_suffix(action.size() - action.find_last_not_of(' ') - 1);
    constexpr std::string_view kLabel = "$labels.";
    if (action.substr(0, kLabel.size()) == kLabel) {
      auto it = labels.find(std::string(action.substr(kLabel.size())));
      if (it != labels.end()) out += it->second;  // Go templates print a missing key as ""
    } else if (!value && (action == "$value" || action == "$value | humanizeDuration")) {
      out.append(text.substr(open, close + 2 - open));
    } else if (action == "$value") {
      out += std::to_string(*value);
    } else if (action == "$value | humanizeDuration") {
      out += HumanizeDuration(*value);
    } else {
      throw std::logic_error(fmt::format("unsupported template action {{{{{}}}}}", action));
    }
    pos = close + 2;
  }
  out.append(text.substr(pos));
  return out;
}

std::optional<std::string> ExampleSeries(const Selector& selector) {
  std::string metric = selector.metric;
  std::map<std::string, std::string> labels;
  for (const auto& matcher : selector.matchers) {
    std::string value;
    if (matcher.op == "=") {
      value = matcher.value;
    } else if (matcher.op == "=~") {
      // A list of literal words: take the first one.
      std::string_view regex = matcher.value;
      if (regex.find_first_of("\\.+*?()[]{}^$") != std::string_view::npos) return std::nullopt;
      value = std::string(regex.substr(0, regex.find('|')));
    } else if (matcher.value.empty()) {
      value = "x";  // != "" and !~ "" ask for any non-empty value
    }
    if (matcher.name == "__name__") {
      metric = value;
    } else if (!value.empty()) {
      labels[matcher.name] = value;
    }
  }
  if (metric.empty()) return std::nullopt;
  std::string out = metric + "{";
  bool first = true;
  for (const auto& [name, value] : labels) {
    out += (first ? "" : ",") + name + "=" + PromString(value);
    first = false;
  }
  return out + "}";
}

}  // namespace schedwatch::rulegen
