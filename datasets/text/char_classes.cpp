#include "datasets/text/char_classes.h"

#include <array>
#include <cstdint>

#include <utf8proc.h>

namespace kestrel::text {
namespace {

using detail::kControl;
using detail::kPunctuation;
using detail::kSplitSpace;
using detail::kWhitespace;

constexpr std::array<std::uint8_t, 128> make_ascii_table() {
  std::array<std::uint8_t, 128> table{};
  for (int c = 0; c < 32; ++c) table[c] = kControl;
  table[127] = kControl;
  for (char c : {' ', '\t', '\n', '\r'}) table[static_cast<int>(c)] = kWhitespace | kSplitSpace;
  // Python's str.split() also splits on \v, \f and the separators \x1c-\x1f (which BERT's
  // cleaning removes as control characters before splitting anyway).
  for (int c : {0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x1F}) table[c] = kControl | kSplitSpace;
  for (int c = 33; c <= 126; ++c) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (!alnum) table[c] = kPunctuation;
  }
  return table;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

}  // namespace

const std::array<std::uint8_t, 128> detail::kAsciiClasses = make_ascii_table();

bool detail::is_bert_whitespace_slow(char32_t c) { return category(c) == UTF8PROC_CATEGORY_ZS; }

bool detail::is_bert_control_slow(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
  }
}

bool detail::is_bert_punctuation_slow(char32_t c) {
  const utf8proc_category_t cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool detail::is_split_space_slow(char32_t c) {
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_nonspacing_mark(char32_t c) { return c >= 0x300 && category(c) == UTF8PROC_CATEGORY_MN; }

}  // namespace kestrel::text
