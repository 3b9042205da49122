// WordPieceTokenizer::tokenize against BERT's normalization, each expectation worked out by hand
// from Hugging Face's BertTokenizer (clean text, CJK spacing, NFC, whitespace split, lower-case,
// NFD + drop Mn, punctuation split, WordPiece).
#include <gtest/gtest.h>

#include "datasets/text/wordpiece_tokenizer.h"
#include "tests/datasets/text/tokenizer_test_support.h"

namespace kestrel::testing {
namespace {

using text::TokenizerOptions;

TEST(TokenizeAccents, LowerCaseStripsAccentsByDefault) {
  auto tok = make_tokenizer({"hello", "world", "nandu", "aland", "cafe", "istanbul"});
  EXPECT_EQ(tok.tokenize("H\u00e9llo W\u00f6rld"), (Tokens{"hello", "world"}));
  EXPECT_EQ(tok.tokenize("\u00d1and\u00fa"), (Tokens{"nandu"}));   // Ñandú
  EXPECT_EQ(tok.tokenize("\u00c5land"), (Tokens{"aland"}));        // Å, precomposed
  EXPECT_EQ(tok.tokenize("A\u030aland"), (Tokens{"aland"}));       // A + combining ring
  EXPECT_EQ(tok.tokenize("Cafe\u0301"), (Tokens{"cafe"}));         // e + combining acute
  EXPECT_EQ(tok.tokenize("\u0130stanbul"), (Tokens{"istanbul"}));  // İ lowers to i + U+0307, then stripped
}

TEST(TokenizeAccents, LowerCaseWithoutStripping) {
  auto tok = make_tokenizer({"h\u00e9llo", "caf\u00e9", "\u00e5land", "i\u0307stanbul"}, {.strip_accents = false});
  EXPECT_EQ(tok.tokenize("H\u00c9LLO"), (Tokens{"h\u00e9llo"}));
  // NFC first: the decomposed spelling meets the precomposed vocabulary entry.
  EXPECT_EQ(tok.tokenize("Cafe\u0301"), (Tokens{"caf\u00e9"}));
  EXPECT_EQ(tok.tokenize("A\u030aland"), (Tokens{"\u00e5land"}));
  // Python's str.lower() maps İ to two characters.
  EXPECT_EQ(tok.tokenize("\u0130stanbul"), (Tokens{"i\u0307stanbul"}));
}

TEST(TokenizeAccents, CasedKeepsAccentsUnlessAsked) {
  auto cased = make_tokenizer({"H\u00e9llo", "Hello", "\u00d1and\u00fa"}, {.do_lower_case = false});
  EXPECT_EQ(cased.tokenize("H\u00e9llo \u00d1and\u00fa"), (Tokens{"H\u00e9llo", "\u00d1and\u00fa"}));
  EXPECT_EQ(cased.tokenize("hello"), (Tokens{"[UNK]"}));  // case matters without lower-casing

  auto stripped = make_tokenizer({"Hello", "Nandu"}, {.do_lower_case = false, .strip_accents = true});
  EXPECT_EQ(stripped.tokenize("H\u00e9llo \u00d1and\u00fa"), (Tokens{"Hello", "Nandu"}));
}

TEST(TokenizeAccents, StrippingDecomposesKanaAndHangul) {
  // で is て + U+3099 (Mn) under NFD, so uncased BERT reads it as て; hangul syllables decompose
  // into conjoining jamo, which are letters and stay.
  auto tok = make_tokenizer({"\u3066\u3059", "\u3067\u3059", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"});
  EXPECT_EQ(tok.tokenize("\u3067\u3059"), (Tokens{"\u3066\u3059"}));
  EXPECT_EQ(tok.tokenize("\ud55c\uad6d\uc5b4"), (Tokens{"\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"}));

  auto kept = make_tokenizer({"\u3067\u3059"}, {.strip_accents = false});
  EXPECT_EQ(kept.tokenize("\u3067\u3059"), (Tokens{"\u3067\u3059"}));
}

TEST(TokenizeAccents, LoneCombiningMarkVanishes) {
  auto tok = make_tokenizer({"a", "b"});
  EXPECT_EQ(tok.tokenize("a \u0301 b"), (Tokens{"a", "b"}));
}

TEST(TokenizeCjk, EachIdeographIsAWord) {
  auto tok =
      make_tokenizer({"\u4e2d", "\u6587", "abc", "\u65e5", "\u672c", "\u8a9e", "\u3067\u3059", "\uf900", "\U00020000"},
                     {.strip_accents = false});
  EXPECT_EQ(tok.tokenize("\u4e2d\u6587abc\u65e5\u672c\u8a9e\u3067\u3059"),
            (Tokens{"\u4e2d", "\u6587", "abc", "\u65e5", "\u672c", "\u8a9e", "\u3067\u3059"}));
  // Extension B is split too.
  EXPECT_EQ(tok.tokenize("abc\U00020000abc"), (Tokens{"abc", "\U00020000", "abc"}));
}

TEST(TokenizeCjk, CompatibilityIdeographIsSplitThenComposedByNfc) {
  // U+F900 is in BERT's CJK ranges; NFC maps it to U+8C48 (its canonical equivalent).
  auto tok = make_tokenizer({"a", "\u8c48"}, {.strip_accents = false});
  EXPECT_EQ(tok.tokenize("a\uf900a"), (Tokens{"a", "\u8c48", "a"}));
}

TEST(TokenizeCjk, KanaAndHangulAreNotSplit) {
  auto tok = make_tokenizer({"\u3072\u3089\u304c\u306a", "\ud55c\uad6d\uc5b4"}, {.strip_accents = false});
  EXPECT_EQ(tok.tokenize("\u3072\u3089\u304c\u306a \ud55c\uad6d\uc5b4"),
            (Tokens{"\u3072\u3089\u304c\u306a", "\ud55c\uad6d\uc5b4"}));
}

TEST(TokenizeCjk, CanBeTurnedOff) {
  auto tok = make_tokenizer({"\u4e2d\u6587"}, {.tokenize_chinese_chars = false});
  EXPECT_EQ(tok.tokenize("\u4e2d\u6587"), (Tokens{"\u4e2d\u6587"}));
}

TEST(TokenizePunctuation, AsciiPunctuationIsSplit) {
  auto tok = make_tokenizer({"hello", ",", "world", "!", "$", "5", "a", "^", "b", "`", "c", "'", "s", "don", "t"});
  EXPECT_EQ(tok.tokenize("Hello, world!"), (Tokens{"hello", ",", "world", "!"}));
  // $ ^ ` are symbols in Unicode but punctuation to BERT, as every non-alphanumeric ASCII character.
  EXPECT_EQ(tok.tokenize("$5 a^b`c"), (Tokens{"$", "5", "a", "^", "b", "`", "c"}));
  EXPECT_EQ(tok.tokenize("don't"), (Tokens{"don", "'", "t"}));
}

TEST(TokenizePunctuation, UnicodePunctuationIsSplit) {
  auto tok = make_tokenizer({"\u201c", "\u201d", "quoted", "\u2014", "\u00bf", "que", "?", "a", "b", "5\u20ac"});
  EXPECT_EQ(tok.tokenize("\u201cquoted\u201d"), (Tokens{"\u201c", "quoted", "\u201d"}));
  EXPECT_EQ(tok.tokenize("a\u2014b"), (Tokens{"a", "\u2014", "b"}));
  EXPECT_EQ(tok.tokenize("\u00bfQu\u00e9?"), (Tokens{"\u00bf", "que", "?"}));
  // The euro sign is a currency symbol (Sc), not punctuation: it stays inside the word.
  EXPECT_EQ(tok.tokenize("5\u20ac"), (Tokens{"5\u20ac"}));
}

TEST(TokenizeCleaning, ControlAndFormatCharactersAreRemoved) {
  auto tok = make_tokenizer({"hello", "ab"});
  EXPECT_EQ(tok.tokenize("hel\u200blo"), (Tokens{"hello"}));  // zero-width space (Cf)
  EXPECT_EQ(tok.tokenize(std::string("a\0b", 3)), (Tokens{"ab"}));
  EXPECT_EQ(tok.tokenize("a\x07"
                         "b"),
            (Tokens{"ab"}));                                  // bell (Cc)
  EXPECT_EQ(tok.tokenize("\ufeffhello"), (Tokens{"hello"}));  // byte-order mark (Cf)
  EXPECT_EQ(tok.tokenize("a\u00adb"), (Tokens{"ab"}));        // soft hyphen (Cf)
  EXPECT_EQ(tok.tokenize("a\u200db"), (Tokens{"ab"}));        // zero-width joiner (Cf)
  EXPECT_EQ(tok.tokenize("a\ue000b"), (Tokens{"ab"}));        // private use (Co)
  EXPECT_EQ(tok.tokenize("a\ufffdb"), (Tokens{"ab"}));        // the replacement character
}

TEST(TokenizeCleaning, EveryKindOfWhitespaceSeparatesWords) {
  auto tok = make_tokenizer({"a", "b", "c", "d"});
  const Tokens ab = {"a", "b"};
  EXPECT_EQ(tok.tokenize("a\u00a0b"), ab);  // no-break space (Zs)
  EXPECT_EQ(tok.tokenize("a\u3000b"), ab);  // ideographic space
  EXPECT_EQ(tok.tokenize("a\u2009b"), ab);  // thin space
  EXPECT_EQ(tok.tokenize("a\u2028b"), ab);  // line separator (Zl): Python's split() splits there
  EXPECT_EQ(tok.tokenize("  a\tb\nc\r\nd  "), (Tokens{"a", "b", "c", "d"}));
  EXPECT_TRUE(tok.tokenize(" \t\n\u00a0").empty());
  EXPECT_TRUE(tok.tokenize("").empty());
}

TEST(TokenizeCleaning, CleanTextOffKeepsControlCharacters) {
  auto tok = make_tokenizer({"a\u200bb"}, {.clean_text = false});
  EXPECT_EQ(tok.tokenize("a\u200bb"), (Tokens{"a\u200bb"}));
}

}  // namespace
}  // namespace kestrel::testing
