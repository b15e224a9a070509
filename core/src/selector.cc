#include "schedwatch/selector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace schedwatch {
namespace {

bool IsIdentifierStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentifierChar(char c) {
  return IsIdentifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  Result<Selector> Parse() {
    Selector selector;
    SkipSpace();
    selector.metric = Identifier(/*allow_colon=*/true);
    SkipSpace();
    if (Peek() == '{') {
      ++pos_;
      while (SkipSpace(), Peek() != '}') {
        LabelMatcher matcher;
        matcher.name = Identifier(/*allow_colon=*/false);
        if (matcher.name.empty()) return Expected("a label name or '}'");
        SkipSpace();
        for (std::string_view op : {"=~", "!~", "!=", "="}) {
          if (text_.substr(pos_, op.size()) == op) {
            matcher.op = std::string(op);
            pos_ += op.size();
            break;
          }
        }
        if (matcher.op.empty()) {
          return Expected(fmt::format("'=', '!=', '=~' or '!~' after label {}", matcher.name));
        }
        SkipSpace();
        auto value = String();
        if (!value) return Error{value.error()};
        matcher.value = *value;
        selector.matchers.push_back(std::move(matcher));
        SkipSpace();
        if (Peek() == ',') {
          ++pos_;
        } else if (Peek() != '}') {
          return Expected("',' or '}'");
        }
      }
      ++pos_;
    }
    SkipSpace();
    if (pos_ != text_.size()) {
      return Expected(selector.metric.empty() && pos_ == 0 ? "a metric name or '{'"
                                                           : "the end of the selector");
    }
    if (selector.metric.empty() && selector.matchers.empty()) {
      return Error{"expected a metric name or label matchers"};
    }
    bool any_non_empty =
        !selector.metric.empty() ||
        std::any_of(selector.matchers.begin(), selector.matchers.end(), [](const LabelMatcher& m) {
          return !(m.op == "=" || m.op == "=~") || !m.value.empty();
        });
    if (!any_non_empty) return Error{"a selector must have at least one non-empty matcher"};
    return selector;
  }

 private:
  Error Expected(const std::string& what) const {
    return Error{fmt::format("expected {} at character {}", what, pos_ + 1)};
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  std::string Identifier(bool allow_colon) {
    std::size_t start = pos_;
    auto ok = [&](char c, bool first) {
      return (first ? IsIdentifierStart(c) : IsIdentifierChar(c)) || (allow_colon && c == ':');
    };
    while (pos_ < text_.size() && ok(text_[pos_], pos_ == start)) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  Result<std::string> String() {
    char quote = Peek();
    if (quote != '"' && quote != '\'' && quote != '`') return Expected("a quoted value");
    std::size_t opening = pos_++;
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\' && quote != '`' && pos_ < text_.size()) {
        char escaped = text_[pos_++];
        value += escaped == 'n' ? '\n' : escaped == 't' ? '\t' : escaped;
      } else {
        value += c;
      }
    }
    if (pos_ == text_.size()) {
      return Error{fmt::format("the string opened at character {} is not closed", opening + 1)};
    }
    ++pos_;
    return value;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<Selector> ParseSelector(std::string_view text) { return SelectorParser(text).Parse(); }

}  // namespace schedwatch
