// An optional integer in the integer's own size: the type's minimum stands for "none".
// std::optional<int64_t> takes 16 bytes for 8; a refresh holds a dozen such times for each of
// up to 100,000 roles, twice while the next refresh is built.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>

namespace schedwatch {

template <typename T>
class CompactOptional {
 public:
  constexpr CompactOptional() = default;
  constexpr CompactOptional(std::nullopt_t) {}  // NOLINT: as std::optional converts
  // The minimum itself cannot be held: no time or count here comes near it.
  constexpr CompactOptional(T value) : value_(value) {}     // NOLINT
  constexpr CompactOptional(const std::optional<T>& value)  // NOLINT
      : value_(value ? *value : kNone) {}

  constexpr operator std::optional<T>() const {  // NOLINT: where std::optional is wanted
    return has_value() ? std::optional<T>(value_) : std::nullopt;
  }
  constexpr bool has_value() const { return value_ != kNone; }
  constexpr explicit operator bool() const { return has_value(); }
  constexpr T operator*() const { return value_; }
  constexpr T value() const {
    if (!has_value()) throw std::bad_optional_access();
    return value_;
  }
  constexpr T value_or(T other) const { return has_value() ? value_ : other; }
  constexpr void reset() { value_ = kNone; }

  // As std::optional orders them: none before every value, which the stored minimum also is.
  friend constexpr bool operator==(CompactOptional a, CompactOptional b) {
    return a.value_ == b.value_;
  }
  friend constexpr bool operator!=(CompactOptional a, CompactOptional b) {
    return a.value_ != b.value_;
  }
  friend constexpr bool operator<(CompactOptional a, CompactOptional b) {
    return a.value_ < b.value_;
  }
  friend constexpr bool operator>(CompactOptional a, CompactOptional b) {
    return a.value_ > b.value_;
  }
  friend constexpr bool operator<=(CompactOptional a, CompactOptional b) {
    return a.value_ <= b.value_;
  }
  friend constexpr bool operator>=(CompactOptional a, CompactOptional b) {
    return a.value_ >= b.value_;
  }

 private:
  static constexpr T kNone = std::numeric_limits<T>::min();
  T value_ = kNone;
};

// Unix seconds, or none.
using OptionalTime = CompactOptional<std::int64_t>;
// A count, or none (unknown).
using OptionalCount = CompactOptional<int>;

}  // namespace schedwatch
