// An immutable text whose copies share one buffer, counted: a LiveObject is copied from a
// source's cache into its snapshot and from there into the published refresh, and equal copies
// then hold its text once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "schedwatch/counted.h"

namespace schedwatch {

class SharedText {
 public:
  SharedText() = default;
  // `size` bytes to fill through data() before the text is first copied; 4 GiB at most.
  explicit SharedText(std::size_t size);

  std::size_t size() const { return block_ ? block_->size : 0; }
  const char* data() const { return block_ ? Bytes(block_.get()) : nullptr; }
  char* data() { return block_ ? Bytes(block_.get()) : nullptr; }
  std::string_view view() const { return {data(), size()}; }

  // One buffer is equal to itself without a look at its bytes.
  friend bool operator==(const SharedText& a, const SharedText& b) {
    return a.block_.get() == b.block_.get() || a.view() == b.view();
  }

 private:
  // The bytes follow it in the same allocation.
  struct Block {
    std::atomic<std::uint32_t> references;
    std::uint32_t size;
    static void Free(Block* block) noexcept;
  };
  static char* Bytes(Block* block) { return reinterpret_cast<char*>(block + 1); }

  Counted<Block> block_;
};

}  // namespace schedwatch
