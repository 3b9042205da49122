// Scratch memory for kernels: a buffer that only grows, 64-byte aligned (a cache line, and the
// alignment vector loads want), its elements left uninitialised. Kept thread_local, it gives each
// thread its own scratch with no allocation once a step's shapes have been seen.
//
//   thread_local AlignedBuffer<float> scratch;
//   float* block = scratch.get(rows * cols);   // reallocated only past the largest count yet
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace kestrel::kernels {

template <class T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  /// Room for `count` elements; earlier contents are kept unless it grows.
  T* get(std::size_t count) {
    if (count > size_) {
      data_.reset(static_cast<T*>(::operator new[](count * sizeof(T), std::align_val_t{kAlignment})));
      size_ = count;
    }
    return data_.get();
  }

 private:
  struct AlignedDelete {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t{kAlignment}); }
  };
  std::unique_ptr<T, AlignedDelete> data_;
  std::size_t size_ = 0;
};

/// Tensor data is 64-byte aligned (core/buffer.h): this many floats.
inline constexpr std::int64_t kTensorAlignFloats = 16;

/// Room in `buffer` for float32 copies of elements [offset, offset + count) of a tensor of another
/// dtype, shifted to sit where they would in the whole tensor widened to float32, modulo 64 bytes:
/// Eigen's vector loops then split them as they would split that tensor, so a kernel computing
/// on staged runs gets the bits of widening the whole tensor.
inline float* staged_run(AlignedBuffer<float>& buffer, std::int64_t offset, std::int64_t count) {
  return buffer.get(static_cast<std::size_t>(count + kTensorAlignFloats)) + offset % kTensorAlignFloats;
}

}  // namespace kestrel::kernels
