#include "datasets/text/bert_normalizer.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <utf8proc.h>

#include "datasets/text/char_classes.h"

namespace kestrel::text {
namespace {

// Below U+0300 no character composes with its neighbour, and below U+00C0 none has a canonical
// decomposition: the common Latin text skips utf8proc entirely.
constexpr char32_t kFirstComposing = 0x300;
constexpr char32_t kFirstDecomposable = 0xC0;

bool all_below(std::u32string_view text, char32_t limit) {
  return std::all_of(text.begin(), text.end(), [limit](char32_t c) { return c < limit; });
}

int combining_class(utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; }

// Canonical decomposition followed by the canonical ordering of combining marks, as NFD defines it.
std::vector<utf8proc_int32_t> decompose(std::u32string_view text) {
  std::vector<utf8proc_int32_t> out;
  out.reserve(text.size() + 8);
  utf8proc_int32_t buffer[32];
  int boundclass = 0;  // only read with UTF8PROC_CHARBOUND
  for (char32_t c : text) {
    const auto n =
        utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buffer, 32,
                                static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), &boundclass);
    if (n <= 0) {  // cannot happen for valid code points; keep the character unchanged
      out.push_back(static_cast<utf8proc_int32_t>(c));
      continue;
    }
    out.insert(out.end(), buffer, buffer + std::min<utf8proc_ssize_t>(n, 32));
  }
  // Stable-sort every run of non-starters by combining class.
  std::size_t i = 0;
  while (i < out.size()) {
    if (combining_class(out[i]) == 0) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < out.size() && combining_class(out[j]) != 0) ++j;
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
                     [](utf8proc_int32_t a, utf8proc_int32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  return out;
}

}  // namespace

void clean_text(std::u32string_view text, const NormalizerOptions& options, std::u32string& out) {
  out.clear();
  out.reserve(text.size() + 8);
  for (char32_t c : text) {
    if (options.clean_text) {
      if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
      if (is_bert_whitespace(c)) {
        out.push_back(U' ');
        continue;
      }
    }
    if (options.tokenize_chinese_chars && c >= 0x3400 && is_cjk_ideograph(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
      continue;
    }
    out.push_back(c);
  }
}

void to_nfc(std::u32string& text) {
  if (all_below(text, kFirstComposing)) return;
  std::vector<utf8proc_int32_t> buffer = decompose(text);
  const auto n = utf8proc_normalize_utf32(buffer.data(), static_cast<utf8proc_ssize_t>(buffer.size()),
                                          static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return;  // utf8proc only fails on invalid code points, which decoding never yields
  text.assign(buffer.begin(), buffer.begin() + n);
}

void lowercase_into(std::u32string_view text, std::u32string& out) {
  out.clear();
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 128) {
      out.push_back(c >= U'A' && c <= U'Z' ? c + 32 : c);
    } else if (c == 0x130) {
      // The one unconditional full mapping that differs from the simple one: İ -> i + combining dot.
      out.push_back(U'i');
      out.push_back(0x307);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
}

void strip_accents(std::u32string& text) {
  if (all_below(text, kFirstDecomposable)) return;
  std::vector<utf8proc_int32_t> buffer = decompose(text);
  text.clear();
  for (utf8proc_int32_t c : buffer) {
    if (!is_nonspacing_mark(static_cast<char32_t>(c))) text.push_back(static_cast<char32_t>(c));
  }
}

}  // namespace kestrel::text
