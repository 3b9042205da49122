// TokenMap: a read-only hash map from token text to id, for WordPiece's many lookups per word.
//
//   text::TokenMap map;
//   map.insert("hello", 7);                  // a later insert of the same token replaces the id
//   map.find("hello");                       // 7
//   map.find("absent");                      // -1
//
// Open addressing in one flat array with the token bytes in one arena: a lookup hashes the bytes
// once and usually touches one slot, where std::unordered_map walks a node list behind a modulo.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::text {

class TokenMap {
 public:
  /// Adds or replaces a token's id (ids are >= 0).
  void insert(std::string_view token, std::int64_t id);
  /// The id of `token`, or -1.
  std::int64_t find(std::string_view token) const;
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t offset = 0;  // into arena_
    std::uint32_t length = 0;
    std::int64_t id = -1;  // -1: empty slot
  };
  static std::uint64_t hash(std::string_view s);
  void grow();

  std::vector<Slot> slots_;
  std::string arena_;
  std::size_t size_ = 0;
};

}  // namespace kestrel::text
