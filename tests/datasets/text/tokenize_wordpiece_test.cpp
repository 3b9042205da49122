// WordPiece splitting, special tokens typed in the text, ids and decoding.
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/wordpiece.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(WordPiece, GreedyLongestMatchWithContinuations) {
  auto tok = make_tokenizer({"un", "##aff", "##able", "una", "##ff", "runn", "##ing", "run", "##n"});
  EXPECT_EQ(tok.tokenize("unaffable"), (Tokens{"una", "##ff", "##able"}));  // "una" is longer than "un"
  EXPECT_EQ(tok.tokenize("running"), (Tokens{"runn", "##ing"}));
  EXPECT_EQ(tok.tokenize("run"), (Tokens{"run"}));
}

TEST(WordPiece, GreedyDoesNotBacktrack) {
  // The longest first piece ("ab") is taken, then the longest continuation at each step.
  auto tok = make_tokenizer({"a", "ab", "##c", "##d", "##bcd"});
  EXPECT_EQ(tok.tokenize("abcd"), (Tokens{"ab", "##c", "##d"}));
  // A dead end makes the whole word unknown, even though "a" + "##bcd" would have worked.
  auto dead_end = make_tokenizer({"a", "ab", "##bcd"});
  EXPECT_EQ(dead_end.tokenize("abcd"), (Tokens{"[UNK]"}));
}

TEST(WordPiece, UnsplittableWordIsUnknown) {
  auto tok = make_tokenizer({"x", "##y", "hello"});
  EXPECT_EQ(tok.tokenize("xyz hello"), (Tokens{"[UNK]", "hello"}));
  EXPECT_EQ(tok.tokenize("zx"), (Tokens{"[UNK]"}));
}

TEST(WordPiece, WordsOverOneHundredCharactersAreUnknown) {
  auto tok = make_tokenizer({"a", "##a", "\u0436", "##\u0436", "b"});
  const Tokens hundred = tok.tokenize(repeat("a", 100));
  ASSERT_EQ(hundred.size(), 100u);
  EXPECT_EQ(hundred.front(), "a");
  EXPECT_EQ(hundred.back(), "##a");
  EXPECT_EQ(tok.tokenize(repeat("a", 101) + " b"), (Tokens{"[UNK]", "b"}));
  // The limit counts characters, not bytes.
  EXPECT_EQ(tok.tokenize(repeat("\u0436", 100)).size(), 100u);
  EXPECT_EQ(tok.tokenize(repeat("\u0436", 101)), (Tokens{"[UNK]"}));
}

TEST(WordPiece, LimitIsAnOption) {
  auto tok = make_tokenizer({"a", "##a"}, {.max_input_chars_per_word = 3});
  EXPECT_EQ(tok.tokenize("aaa"), (Tokens{"a", "##a", "##a"}));
  EXPECT_EQ(tok.tokenize("aaaa"), (Tokens{"[UNK]"}));
}

TEST(WordPiece, DuplicateTokensTakeTheLaterId) {
  text::WordPiece wp({"[UNK]", "x", "x"}, {.unk_id = 0});
  std::vector<std::int64_t> ids;
  wp.tokenize(U"x", ids);
  EXPECT_EQ(ids, (Ids{2}));
}

TEST(SpecialTokensInText, StayWholeWhenTypedExactly) {
  auto tok = make_tokenizer({"hello", "world", ".", "[", "]", "cls", "mask"});
  EXPECT_EQ(tok.tokenize("[CLS] hello [MASK]."), (Tokens{"[CLS]", "hello", "[MASK]", "."}));
  // Found even without spaces around them.
  EXPECT_EQ(tok.tokenize("hello[MASK]world"), (Tokens{"hello", "[MASK]", "world"}));
  // Lower-cased or incomplete, they are ordinary text.
  EXPECT_EQ(tok.tokenize("[cls] [Mask]"), (Tokens{"[", "cls", "]", "[", "mask", "]"}));
  EXPECT_EQ(tok.tokenize("[MASK"), (Tokens{"[", "mask"}));
  EXPECT_EQ(tok.encode("[SEP]", {.add_special_tokens = false}).input_ids, (Ids{kSep}));
}

TEST(SpecialTokensInText, CasedTokenizerKeepsThemToo) {
  auto tok = make_tokenizer({"Hello", "[", "]", "CLS"}, {.do_lower_case = false});
  EXPECT_EQ(tok.tokenize("Hello [CLS]Hello"), (Tokens{"Hello", "[CLS]", "Hello"}));
  // Joined back together by the cleaning (a zero-width space removed), the word is never split.
  EXPECT_EQ(tok.tokenize("[CL\u200bS]"), (Tokens{"[CLS]"}));
}

TEST(TokenizerIds, LookupsAndSpecialIds) {
  auto tok = make_tokenizer({"hello"});
  EXPECT_EQ(tok.vocab_size(), 6);
  EXPECT_EQ(tok.token_to_id("hello"), 5);
  EXPECT_EQ(tok.token_to_id("absent"), kUnk);
  EXPECT_EQ(tok.id_to_token(5), "hello");
  EXPECT_EQ(tok.id_to_token(99), "[UNK]");  // an unknown id reads as the unknown token
  EXPECT_EQ(tok.pad_token_id(), kPad);
  EXPECT_EQ(tok.cls_token_id(), kCls);
  EXPECT_EQ(tok.sep_token_id(), kSep);
  EXPECT_EQ(tok.mask_token_id(), kMask);
  EXPECT_EQ(tok.all_special_ids(), (Ids{kUnk, kSep, kPad, kCls, kMask}));
  for (std::int64_t id : {kPad, kUnk, kCls, kSep, kMask}) EXPECT_TRUE(tok.is_special_id(id));
  EXPECT_FALSE(tok.is_special_id(5));
  EXPECT_EQ(tok.convert_ids_to_tokens({2, 5, 3}), (Tokens{"[CLS]", "hello", "[SEP]"}));
}

TEST(TokenizerIds, MissingSpecialTokenIsAValueError) {
  const std::string message = error_message<ValueError>([] {
    text::WordPieceTokenizer({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"});
  });
  EXPECT_TRUE(contains(message, "'[MASK]'")) << message;
  EXPECT_TRUE(contains(message, "mask_token")) << message;
}

TEST(TokenizerIds, AdditionalSpecialTokens) {
  auto tok = make_tokenizer({"hi", "<ent>", "[", "]"}, {.additional_special_tokens = {"<ent>", "[CLS]"}});
  EXPECT_EQ(tok.tokenize("hi<ent>hi"), (Tokens{"hi", "<ent>", "hi"}));
  EXPECT_EQ(tok.all_special_ids(), (Ids{kUnk, kSep, kPad, kCls, kMask, 6}));  // [CLS] is not repeated
  EXPECT_TRUE(tok.is_special_id(6));
  EXPECT_TRUE(
      contains(error_message<ValueError>([] { make_tokenizer({"hi"}, {.additional_special_tokens = {"<absent>"}}); }),
               "additional_special_tokens"));
}

TEST(TokenizerIds, VocabularyWithoutMaskToken) {
  text::WordPieceTokenizer tok({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"}, {.mask_token = ""});
  EXPECT_EQ(tok.mask_token_id(), -1);
  EXPECT_EQ(tok.all_special_ids(), (Ids{kUnk, kSep, kPad, kCls}));
  EXPECT_FALSE(tok.is_special_id(-1));
  EXPECT_EQ(tok.encode("a").input_ids, (Ids{kCls, 4, kSep}));
}

TEST(TokenizerIds, OtherSpecialTokenNames) {
  text::WordPieceTokenizer tok(
      {"<pad>", "<unk>", "<s>", "</s>", "<mask>", "hi"},
      {.unk_token = "<unk>", .sep_token = "</s>", .pad_token = "<pad>", .cls_token = "<s>", .mask_token = "<mask>"});
  EXPECT_EQ(tok.encode("hi there").input_ids, (Ids{2, 5, 1, 3}));
  EXPECT_EQ(tok.tokenize("hi<mask>"), (Tokens{"hi", "<mask>"}));
}

TEST(Decode, JoinsContinuationsAndCleansSpaces) {
  auto tok = make_tokenizer({"hello", ",", "world", "!", "un", "##aff", "##able", "don", "'", "t", "it", "s", "."});
  const Ids ids = tok.encode("Hello, unaffable world! It's.").input_ids;
  EXPECT_EQ(tok.decode(ids), "[CLS] hello, unaffable world! it's. [SEP]");
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "hello, unaffable world! it's.");
  // " ' " becomes "'", as Hugging Face's clean-up does.
  EXPECT_EQ(tok.decode(tok.encode("don ' t", {.add_special_tokens = false}).input_ids), "don't");
  EXPECT_EQ(tok.decode({}), "");
}

}  // namespace
}  // namespace kestrel::testing
