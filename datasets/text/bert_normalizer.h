// BERT's text normalization, step by step, on code points.
//
//   std::u32string out;
//   text::clean_text(U"a\u200Bb\tc\u4E2D", {.clean_text = true, .tokenize_chinese_chars = true}, out);
//   // U"ab c \u4E2D "   (zero-width space removed, tab to space, spaces around the ideograph)
//   text::to_nfc(out);                   // U"e\u0301" becomes U"\u00E9"
//   text::lowercase_into(U"\u00C9T\u00C9", out);  // U"\u00E9t\u00E9" (Python's str.lower)
//   text::strip_accents(out);            // U"ete": NFD, then nonspacing marks dropped
//
// The order is Hugging Face's BasicTokenizer's: clean and space CJK characters over the whole
// text, NFC, split on whitespace, then lower-case and strip accents word by word. Decomposition
// and composition use utf8proc's tables; the ASCII-only case never reaches them.
#pragma once

#include <string>
#include <string_view>

namespace kestrel::text {

/// Which of BERT's normalization steps run (a Hugging Face BertNormalizer's fields).
struct NormalizerOptions {
  /// Remove U+0000, U+FFFD and control characters; turn whitespace into ' '.
  bool clean_text = true;
  /// Put spaces around CJK ideographs, so each becomes a word.
  bool tokenize_chinese_chars = true;
  bool lowercase = true;
  /// Already resolved: BERT's "unset" means "same as lowercase".
  bool strip_accents = true;
};

/// The whole-text steps: cleaning and CJK spacing (whichever `options` enables). Writes into `out`.
void clean_text(std::u32string_view text, const NormalizerOptions& options, std::u32string& out);
/// Canonical composition (NFC), in place.
void to_nfc(std::u32string& text);
/// Python's str.lower(): the full lowercase mapping, character by character. Writes into `out`.
void lowercase_into(std::u32string_view text, std::u32string& out);
/// Canonical decomposition (NFD) with nonspacing marks (category Mn) removed, in place.
void strip_accents(std::u32string& text);

}  // namespace kestrel::text
