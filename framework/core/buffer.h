// Reference-counted, 64-byte aligned storage for tensor data.
//
//   auto buf = Buffer::allocate(1024);       // 64-byte aligned, shared by handle
//   allocator_stats().allocations;           // how many buffers were ever allocated
//
// The statistics let tests and benchmarks count allocations per step and peak bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kestrel {

class Buffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  /// Allocates size bytes (uninitialized), aligned to kAlignment.
  static std::shared_ptr<Buffer> allocate(std::size_t size);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Buffer(void* data, std::size_t size) : data_(data), size_(size) {}
  void* data_;
  std::size_t size_;
};

struct AllocatorStats {
  std::int64_t allocations = 0;  ///< buffers allocated since start
  std::int64_t bytes_in_use = 0;
  std::int64_t peak_bytes_in_use = 0;
};

/// A snapshot of the process-wide buffer statistics.
AllocatorStats allocator_stats();
/// Resets the peak to the current bytes in use (e.g. before measuring one step).
void reset_peak_bytes_in_use();

}  // namespace kestrel
