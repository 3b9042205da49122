// The character classes of BERT's text normalization and splitting, on Unicode categories from utf8proc.
//
//   text::is_bert_punctuation(U'$');     // true: every non-alphanumeric printable ASCII character
//   text::is_bert_punctuation(U'\u00BF'); // true: category Po
//   text::is_bert_whitespace(U'\u00A0');  // true: category Zs
//   text::is_bert_control(U'\u200B');     // true: category Cf, removed by the normalizer
//   text::is_cjk_ideograph(U'\u4E2D');    // true; kana and hangul are not
//
// ASCII is answered from a table; everything else asks utf8proc.
#pragma once

#include <array>
#include <cstdint>

namespace kestrel::text {

namespace detail {
inline constexpr std::uint8_t kWhitespace = 1;
inline constexpr std::uint8_t kControl = 2;
inline constexpr std::uint8_t kPunctuation = 4;
inline constexpr std::uint8_t kSplitSpace = 8;
/// The classes of each ASCII character (kWhitespace | ...), so the common case is one load.
extern const std::array<std::uint8_t, 128> kAsciiClasses;
bool is_bert_whitespace_slow(char32_t c);
bool is_bert_control_slow(char32_t c);
bool is_bert_punctuation_slow(char32_t c);
bool is_split_space_slow(char32_t c);
}  // namespace detail

/// ' ', \t, \n, \r and category Zs: the characters BERT's cleaning turns into a space.
inline bool is_bert_whitespace(char32_t c) {
  return c < 128 ? (detail::kAsciiClasses[c] & detail::kWhitespace) != 0 : detail::is_bert_whitespace_slow(c);
}
/// Categories Cc, Cf, Cs, Co and Cn except \t, \n, \r: the characters BERT's cleaning removes.
inline bool is_bert_control(char32_t c) {
  return c < 128 ? (detail::kAsciiClasses[c] & detail::kControl) != 0 : detail::is_bert_control_slow(c);
}
/// ASCII 33-47, 58-64, 91-96, 123-126 and the P* categories: each becomes a token of its own.
inline bool is_bert_punctuation(char32_t c) {
  return c < 128 ? (detail::kAsciiClasses[c] & detail::kPunctuation) != 0 : detail::is_bert_punctuation_slow(c);
}
/// The CJK ideograph blocks BERT puts spaces around (unified ideographs, extensions A-E,
/// compatibility ideographs and their supplement).
bool is_cjk_ideograph(char32_t c);
/// The characters Python's str.split() splits on, which is how BERT separates words.
inline bool is_split_space(char32_t c) {
  return c < 128 ? (detail::kAsciiClasses[c] & detail::kSplitSpace) != 0 : detail::is_split_space_slow(c);
}
/// Category Mn (nonspacing marks): what accent stripping drops after NFD.
bool is_nonspacing_mark(char32_t c);

}  // namespace kestrel::text
