// A process-wide cache of kernel primitives (oneDNN's matmul and convolution), built once per
// shape and layout and then shared by every thread: building one costs far more than running it.
//
//   const PrimitiveKey key = {kMatmulKind, m, n, k, lda, ldb, ldc};
//   std::shared_ptr<const MatmulPrimitive> p =
//       primitive_cache().get<MatmulPrimitive>(key, [&] { return std::make_shared<const MatmulPrimitive>(...); });
//
// Entries are type-erased so that this header needs no oneDNN header; the key's first field names
// the kind of primitive, so kinds never collide. Lookups take a shared lock, so replicas on
// several threads look up at once; a miss builds outside the lock (two threads missing together
// may both build, and the first to insert wins). When full, the oldest entry goes; a thread still
// running it keeps it alive through its shared_ptr.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

namespace kestrel::kernels {

/// The full description of a primitive: its kind first, then every dim, stride and flag it was
/// built for, the unused fields 0. Fixed-size, so that a lookup allocates nothing.
using PrimitiveKey = std::array<std::int64_t, 20>;

struct PrimitiveCacheStats {
  std::int64_t hits = 0;
  std::int64_t misses = 0;
  std::int64_t entries = 0;
};

class PrimitiveCache {
 public:
  explicit PrimitiveCache(std::size_t capacity) : capacity_(capacity) {}

  /// The entry for `key`, made by `make()` (returning std::shared_ptr<const T>) on a miss.
  template <class T, class Make>
  std::shared_ptr<const T> get(const PrimitiveKey& key, Make&& make) {
    if (std::shared_ptr<const void> hit = find(key)) return std::static_pointer_cast<const T>(hit);
    std::shared_ptr<const T> made = make();
    return std::static_pointer_cast<const T>(insert(key, std::move(made)));
  }

  PrimitiveCacheStats stats() const;
  /// Drops every entry (tests; primitives in use stay alive until their callers finish).
  void clear();

 private:
  struct Hash {
    std::size_t operator()(const PrimitiveKey& key) const;
  };
  std::shared_ptr<const void> find(const PrimitiveKey& key);
  std::shared_ptr<const void> insert(const PrimitiveKey& key, std::shared_ptr<const void> value);

  const std::size_t capacity_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<PrimitiveKey, std::shared_ptr<const void>, Hash> entries_;
  std::deque<PrimitiveKey> order_;     // insertion order, for eviction
  std::atomic<std::int64_t> hits_{0};  // counted under the shared lock, hence atomic
  std::atomic<std::int64_t> misses_{0};
};

/// The cache every kernel shares.
PrimitiveCache& primitive_cache();

}  // namespace kestrel::kernels
