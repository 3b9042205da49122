// Arena: the block of memory compiled programs lay their intermediates in.
//
// The programs of one jitted function never run at the same time (each call runs one of them), so
// they share one arena, as large as the largest plan: a compile storm of fifty shapes costs fifty
// programs but one block of memory. A program binds its planned offsets to the arena's base when
// it runs, and again whenever a larger program has grown the block.
//
//   auto arena = std::make_shared<jit::Arena>();
//   jit::Executor a(graph_a, arena), b(graph_b, arena);   // one block, sized for the larger plan
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "framework/core/buffer.h"

namespace kestrel::jit {

class Arena {
 public:
  /// The block's start, grown to at least `bytes` first (growing allocates; nothing else does).
  /// Call it with mutex() held, and use the pointer only while it stays held.
  std::byte* reserve(std::int64_t bytes);
  /// Held for a whole run: one program at a time uses the block.
  std::mutex& mutex() { return mutex_; }
  std::int64_t capacity() const { return buffer_ ? static_cast<std::int64_t>(buffer_->size()) : 0; }

 private:
  std::mutex mutex_;
  std::shared_ptr<Buffer> buffer_;
};

}  // namespace kestrel::jit
