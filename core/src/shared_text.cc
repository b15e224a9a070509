#include "schedwatch/shared_text.h"

#include <limits>
#include <new>
#include <stdexcept>

namespace schedwatch {

SharedText::SharedText(std::size_t size) {
  if (size == 0) return;
  if (size > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("SharedText: longer than 4 GiB");
  }
  block_ = Counted<Block>(new (::operator new(sizeof(Block) + size))
                              Block{{1}, static_cast<std::uint32_t>(size)});
}

void SharedText::Block::Free(Block* block) noexcept {
  block->~Block();
  ::operator delete(block);
}

}  // namespace schedwatch
