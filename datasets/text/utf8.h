// UTF-8 decoding and encoding for the tokenizer, which works on code points.
//
//   std::u32string cps = text::utf8::decode("caf\xC3\xA9", text::InvalidUtf8::error, "tokenize");  // U"café"
//   std::string bytes = text::utf8::encode(cps);                                              // "caf\xC3\xA9"
//   text::utf8::decode("a\xFF" "b", text::InvalidUtf8::replace, "tokenize");                 // U"a\uFFFDb"
//
// Invalid input either throws ValueError naming the byte offset, or has each maximal invalid
// subpart replaced with U+FFFD, as Python's bytes.decode("utf-8", errors="replace") does: a
// truncated but valid prefix of a sequence is one replacement, every other bad byte its own.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kestrel::text {

/// What to do with bytes that are not valid UTF-8.
enum class InvalidUtf8 {
  error,    ///< throw ValueError naming the byte offset (the default)
  replace,  ///< replace each invalid sequence with U+FFFD, as Python's errors="replace"
};

namespace utf8 {

/// Decodes `bytes`; `context` starts the error message ("[WordPieceTokenizer]", "vocab.txt:").
std::u32string decode(std::string_view bytes, InvalidUtf8 policy, std::string_view context);
/// Decodes into `out` (cleared first), so callers can reuse its capacity.
void decode_into(std::string_view bytes, InvalidUtf8 policy, std::string_view context, std::u32string& out);
/// The byte offset of the first invalid sequence, or npos when `bytes` is valid UTF-8.
std::size_t find_invalid(std::string_view bytes);

/// Appends the UTF-8 encoding of one code point.
void append(std::string& out, char32_t cp);
std::string encode(std::u32string_view cps);
/// Encodes into `out` (cleared first).
void encode_into(std::u32string_view cps, std::string& out);

}  // namespace utf8
}  // namespace kestrel::text
