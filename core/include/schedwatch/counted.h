// A heap block that counts its holders, held: copies share it and the last one frees it. Block
// has `std::atomic<std::uint32_t> references`, 1 when made, and `static void Free(Block*)`.
// 8 bytes, where a shared_ptr takes 16 and make_shared's block 16 more.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace schedwatch {

template <typename Block>
class Counted {
 public:
  Counted() = default;
  explicit Counted(Block* block) : block_(block) {}  // a new block, counting 1
  Counted(const Counted& other) noexcept : block_(other.block_) {
    if (block_ != nullptr) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  Counted(Counted&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  Counted& operator=(Counted other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~Counted() {
    if (block_ != nullptr && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Block::Free(block_);
    }
  }
  Block* get() const { return block_; }
  Block* operator->() const { return block_; }
  explicit operator bool() const { return block_ != nullptr; }
  bool Shared() const { return block_->references.load(std::memory_order_acquire) > 1; }

 private:
  Block* block_ = nullptr;
};

}  // namespace schedwatch
