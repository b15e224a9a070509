// A text that every job of a spec repeats from a few distinct values (its source's name and
// type, its time zone): one copy of each distinct text for the whole process, and 8 bytes where
// it is used instead of a string's 32 (100,000 jobs: 7 MB). Immutable; the copies are never
// freed, so only texts of few distinct values belong here, never role names or spec versions.
#pragma once

#include <fmt/format.h>

#include <ostream>
#include <string>
#include <string_view>

namespace schedwatch {

class InternedText {
 public:
  InternedText();
  // Implicit, as the std::string each replaces.
  InternedText(std::string_view text);   // NOLINT(google-explicit-constructor)
  InternedText(const std::string& text)  // NOLINT(google-explicit-constructor)
      : InternedText(std::string_view(text)) {}
  InternedText(const char* text)  // NOLINT(google-explicit-constructor)
      : InternedText(std::string_view(text)) {}

  // Distinct texts interned so far in the process (they are never freed).
  static std::size_t PoolSize();

  const std::string& str() const { return *text_; }
  operator const std::string&() const { return *text_; }  // NOLINT(google-explicit-constructor)
  operator std::string_view() const { return *text_; }    // NOLINT(google-explicit-constructor)
  const char* c_str() const { return text_->c_str(); }
  std::size_t size() const { return text_->size(); }
  bool empty() const { return text_->empty(); }

  // Equal texts are the same copy.
  friend bool operator==(const InternedText& a, const InternedText& b) {
    return a.text_ == b.text_;
  }
  friend bool operator==(const InternedText& a, const std::string& b) { return *a.text_ == b; }
  friend bool operator==(const std::string& a, const InternedText& b) { return a == *b.text_; }
  friend bool operator==(const InternedText& a, std::string_view b) { return *a.text_ == b; }
  friend bool operator==(std::string_view a, const InternedText& b) { return a == *b.text_; }
  friend bool operator==(const InternedText& a, const char* b) { return *a.text_ == b; }
  friend bool operator==(const char* a, const InternedText& b) { return a == *b.text_; }
  template <typename T>
  friend bool operator!=(const InternedText& a, const T& b) {
    return !(a == b);
  }
  friend bool operator!=(const std::string& a, const InternedText& b) { return !(a == b); }
  friend bool operator!=(std::string_view a, const InternedText& b) { return !(a == b); }
  friend bool operator<(const InternedText& a, const InternedText& b) {
    return *a.text_ < *b.text_;
  }
  friend std::ostream& operator<<(std::ostream& out, const InternedText& text) {
    return out << *text.text_;
  }

 private:
  const std::string* text_;
};

}  // namespace schedwatch

template <>
struct fmt::formatter<schedwatch::InternedText> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const schedwatch::InternedText& text, FormatContext& context) const {
    return fmt::formatter<std::string_view>::format(std::string_view(text.str()), context);
  }
};
