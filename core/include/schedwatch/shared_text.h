// An immutable text whose copies share one buffer, counted: a LiveObject is copied from a
// source's cache into its snapshot and from there into the published refresh, and equal copies
// then hold its text once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace schedwatch {

class SharedText {
 public:
  SharedText() = default;
  // `size` bytes to fill through data() before the text is first copied; 4 GiB at most.
  explicit SharedText(std::size_t size);
  SharedText(const SharedText& other) noexcept : block_(other.block_) {
    if (block_ != nullptr) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  SharedText(SharedText&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  SharedText& operator=(SharedText other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~SharedText() { Release(); }

  std::size_t size() const { return block_ == nullptr ? 0 : block_->size; }
  const char* data() const { return block_ == nullptr ? nullptr : Bytes(block_); }
  char* data() { return block_ == nullptr ? nullptr : Bytes(block_); }
  std::string_view view() const { return {data(), size()}; }

  // One buffer is equal to itself without a look at its bytes.
  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.block_ == b.block_ || a.view() == b.view();
  }

 private:
  // The bytes follow it in the same allocation.
  struct Block {
    std::atomic<std::uint32_t> references;
    std::uint32_t size;
  };
  static char* Bytes(Block* block) { return reinterpret_cast<char*>(block + 1); }
  void Release() noexcept;

  Block* block_ = nullptr;
};

}  // namespace schedwatch
