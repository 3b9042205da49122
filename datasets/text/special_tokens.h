// Finding special tokens typed in the text, so "[CLS]" or "[MASK]" stays one token.
//
//   text::SpecialTokens specials({U"[CLS]", U"[SEP]", U"[MASK]"});
//   std::vector<text::Segment> parts;
//   specials.split(U"a [MASK]b", parts);
//   // {U"a ", not special}, {U"[MASK]", special 2}, {U"b", not special}
//   std::u32string lowered;
//   specials.lowercase_outside(U"The [MASK] Is", lowered);   // U"the [MASK] is"
//
// As Hugging Face's slow tokenizers do: matching is exact (case-sensitive) and takes the
// leftmost, then longest, special token; with lower-casing on, everything but the special tokens
// is lower-cased first, character by character, and the split runs on the lowered text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::text {

/// A piece of text: a special token (its index among the special tokens) or ordinary text.
struct Segment {
  std::u32string_view text;
  int special = -1;  ///< -1 for ordinary text
};

class SpecialTokens {
 public:
  SpecialTokens() = default;
  explicit SpecialTokens(std::vector<std::u32string> tokens);

  /// Appends the segments of `text` to `out` (views into `text`).
  void split(std::u32string_view text, std::vector<Segment>& out) const;
  /// Python's str.lower() applied to every character outside the special tokens. Writes into `out`.
  void lowercase_outside(std::u32string_view text, std::u32string& out) const;
  const std::vector<std::u32string>& tokens() const { return tokens_; }

 private:
  /// The index of the longest special token starting at text[i], or -1.
  int match_at(std::u32string_view text, std::size_t i) const;
  /// Whether some special token starts with c: the test that rejects almost every position.
  bool may_start(char32_t c) const {
    if (c < 128) return (ascii_first_[c / 64] >> (c % 64)) & 1;
    return other_first_.find(c) != std::u32string::npos;
  }

  std::vector<std::u32string> tokens_;
  std::uint64_t ascii_first_[2] = {0, 0};  // bit c: an ASCII character c starts a special token
  std::u32string other_first_;             // the other characters that start one
};

}  // namespace kestrel::text
