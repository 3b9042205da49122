#include "datasets/text/token_map.h"

#include <cstring>

namespace kestrel::text {

std::uint64_t TokenMap::hash(std::string_view s) {
  // FNV-1a over 8-byte words, then a final mix: tokens are short, so a simple hash is the fast one.
  std::uint64_t h = 0xcbf29ce484222325ull ^ s.size();
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, s.data() + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ull;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  h ^= h >> 32;
  return h;
}

void TokenMap::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.id < 0) continue;
    std::size_t i = slot.hash & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void TokenMap::insert(std::string_view token, std::int64_t id) {
  if ((size_ + 1) * 2 > slots_.size()) grow();  // at most half full: probes stay short
  const std::uint64_t h = hash(token);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = h & mask;
  while (slots_[i].id >= 0) {
    const Slot& slot = slots_[i];
    if (slot.hash == h && std::string_view(arena_).substr(slot.offset, slot.length) == token) {
      slots_[i].id = id;
      return;
    }
    i = (i + 1) & mask;
  }
  slots_[i] = Slot{h, static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(token.size()), id};
  arena_.append(token);
  ++size_;
}

std::int64_t TokenMap::find(std::string_view token) const {
  if (slots_.empty()) return -1;
  const std::uint64_t h = hash(token);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id < 0) return -1;
    if (slot.hash == h && slot.length == token.size() &&
        std::memcmp(arena_.data() + slot.offset, token.data(), token.size()) == 0) {
      return slot.id;
    }
  }
}

}  // namespace kestrel::text
