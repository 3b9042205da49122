#include "framework/jit/arena.h"

namespace kestrel::jit {

std::byte* Arena::reserve(std::int64_t bytes) {
  if (bytes <= 0) return buffer_ ? static_cast<std::byte*>(buffer_->data()) : nullptr;
  if (capacity() < bytes) {
    buffer_.reset();  // release the smaller block before taking the larger one
    buffer_ = Buffer::allocate(static_cast<std::size_t>(bytes));
  }
  return static_cast<std::byte*>(buffer_->data());
}

}  // namespace kestrel::jit
