// The normalization steps and character classes on their own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/text/basic_tokenizer.h"
#include "datasets/text/bert_normalizer.h"
#include "datasets/text/char_classes.h"
#include "datasets/text/pre_tokenizer.h"

namespace kestrel::testing {
namespace {

TEST(CharClasses, BertDefinitions) {
  for (char32_t c : {U'!', U'/', U':', U'@', U'[', U'`', U'{', U'~', U'\u00bf', U'\u201c', U'\u2014', U'\u3002'}) {
    EXPECT_TRUE(text::is_bert_punctuation(c)) << static_cast<int>(c);
  }
  for (char32_t c : {U'a', U'0', U' ', U'\u20ac', U'\u00e9'}) EXPECT_FALSE(text::is_bert_punctuation(c));
  for (char32_t c : {U' ', U'\t', U'\n', U'\r', U'\u00a0', U'\u3000'}) EXPECT_TRUE(text::is_bert_whitespace(c));
  EXPECT_FALSE(text::is_bert_whitespace(U'\u2028'));  // Zl, not Zs
  for (char32_t c : {U'\x01', U'\x7f', U'\u0085', U'\u200b', U'\ufeff', U'\ue000', U'\U000E0001'}) {
    EXPECT_TRUE(text::is_bert_control(c)) << static_cast<int>(c);
  }
  for (char32_t c : {U'\t', U'\n', U'\r', U'a'}) EXPECT_FALSE(text::is_bert_control(c));
  EXPECT_TRUE(text::is_cjk_ideograph(U'\u4e00'));
  EXPECT_TRUE(text::is_cjk_ideograph(U'\U0002A700'));
  EXPECT_FALSE(text::is_cjk_ideograph(U'\u3042'));  // hiragana
  EXPECT_FALSE(text::is_cjk_ideograph(U'\uac00'));  // hangul
}

TEST(Normalizer, CleanText) {
  std::u32string out;
  using namespace std::string_view_literals;  // the literal holds a NUL
  text::clean_text(U"a\u200bb\tc\u4e2dd\u0000e\ufffd"sv, {}, out);
  EXPECT_EQ(out, U"ab c \u4e2d de");
  text::clean_text(U"a\u4e2d", {.tokenize_chinese_chars = false}, out);
  EXPECT_EQ(out, U"a\u4e2d");
}

TEST(Normalizer, NfcLowercaseStripAccents) {
  std::u32string text = U"e\u0301 A\u030a \u1100\u1161";  // e + acute, A + ring, conjoining jamo
  text::to_nfc(text);
  EXPECT_EQ(text, U"\u00e9 \u00c5 \uac00");
  std::u32string lower;
  text::lowercase_into(U"\u00c9T\u00c9 \u0130 \u03a3\u0391\u03a3 \u1e9e", lower);
  // Character by character: no final-sigma rule (BERT lower-cases each character on its own).
  EXPECT_EQ(lower, U"\u00e9t\u00e9 i\u0307 \u03c3\u03b1\u03c3 \u00df");
  std::u32string accents = U"\u00e9t\u00e9 \u1e69 \u00f1";
  text::strip_accents(accents);
  EXPECT_EQ(accents, U"ete s n");
  // Canonical order: marks of different classes are sorted before stripping (here nothing is left).
  std::u32string marks = U"a\u0323\u0302";
  text::strip_accents(marks);
  EXPECT_EQ(marks, U"a");
}

TEST(PreTokenizer, WhitespaceThenPunctuation) {
  std::vector<std::u32string_view> words;
  text::split_on_whitespace(U"  hello,\u2028world  ", words);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0], U"hello,");
  EXPECT_EQ(words[1], U"world");
  std::vector<std::u32string_view> pieces;
  text::split_on_punctuation(U"..a.b", pieces);
  EXPECT_EQ(pieces, (std::vector<std::u32string_view>{U".", U".", U"a", U".", U"b"}));
}

TEST(BasicTokenizer, NeverSplitWordsPassUntouched) {
  text::BasicTokenizer basic({.lowercase = true, .strip_accents = true}, {U"[MASK]"});
  text::Words words;
  basic.tokenize(U"[MASK] [Mask] \u00c9t\u00e9!", words);
  std::vector<std::u32string> got;
  for (std::size_t i = 0; i < words.size(); ++i) got.emplace_back(words[i]);
  EXPECT_EQ(got, (std::vector<std::u32string>{U"[MASK]", U"[", U"mask", U"]", U"ete", U"!"}));
}

}  // namespace
}  // namespace kestrel::testing
