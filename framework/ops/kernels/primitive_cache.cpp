#include "framework/ops/kernels/primitive_cache.h"

#include <mutex>

namespace kestrel::kernels {

std::size_t PrimitiveCache::Hash::operator()(const PrimitiveKey& key) const {
  std::size_t h = 0;
  for (std::int64_t v : key) h ^= std::hash<std::int64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

std::shared_ptr<const void> PrimitiveCache::find(const PrimitiveKey& key) {
  std::shared_lock lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return it->second;
}

std::shared_ptr<const void> PrimitiveCache::insert(const PrimitiveKey& key, std::shared_ptr<const void> value) {
  std::unique_lock lock(mutex_);
  misses_.fetch_add(1, std::memory_order_relaxed);
  auto [it, inserted] = entries_.try_emplace(key, std::move(value));
  if (!inserted) return it->second;  // another thread built it first: everyone runs that one
  order_.push_back(key);
  while (entries_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
  return it->second;
}

PrimitiveCacheStats PrimitiveCache::stats() const {
  std::shared_lock lock(mutex_);
  return {.hits = hits_.load(), .misses = misses_.load(), .entries = static_cast<std::int64_t>(entries_.size())};
}

void PrimitiveCache::clear() {
  std::unique_lock lock(mutex_);
  entries_.clear();
  order_.clear();
}

PrimitiveCache& primitive_cache() {
  // Shapes seen in a training run number in the tens to hundreds; the cap bounds a process that
  // feeds ever new shapes (a sequence length per batch) to a few MB of jitted code.
  static PrimitiveCache cache(4096);
  return cache;
}

}  // namespace kestrel::kernels
