// encode / encode_batch / pad: special tokens, pairs, truncation and padding as Hugging Face's
// prepare_for_model and pad do them.
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

using text::Padding;
using text::Truncation;

// a=5 b=6 c=7 d=8 e=9 f=10 g=11
text::WordPieceTokenizer letters() { return make_tokenizer({"a", "b", "c", "d", "e", "f", "g"}); }

TEST(Encode, SingleSequence) {
  auto tok = letters();
  text::Encoding e = tok.encode("a b c", {.return_special_tokens_mask = true});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, 7, kSep}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 0}));
  EXPECT_EQ(e.attention_mask, (Ids{1, 1, 1, 1, 1}));
  EXPECT_EQ(e.special_tokens_mask, (Ids{1, 0, 0, 0, 1}));
  EXPECT_EQ(tok.encode("").input_ids, (Ids{kCls, kSep}));
}

TEST(Encode, PairHasTokenTypes) {
  auto tok = letters();
  text::Encoding e = tok.encode("a b", "c d e", {.return_special_tokens_mask = true});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, kSep, 7, 8, 9, kSep}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(e.special_tokens_mask, (Ids{1, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(Encode, WithoutSpecialTokens) {
  auto tok = letters();
  text::Encoding e = tok.encode("a b", "c", {.add_special_tokens = false, .return_special_tokens_mask = true});
  EXPECT_EQ(e.input_ids, (Ids{5, 6, 7}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0}));  // Hugging Face's slow tokenizer: all 0 without special tokens
  EXPECT_EQ(e.special_tokens_mask, (Ids{0, 0, 0}));
}

TEST(Encode, OptionalFieldsCanBeLeftOut) {
  text::Encoding e = letters().encode("a", {.return_token_type_ids = false, .return_attention_mask = false});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, kSep}));
  EXPECT_TRUE(e.token_type_ids.empty());
  EXPECT_TRUE(e.attention_mask.empty());
  EXPECT_TRUE(e.special_tokens_mask.empty());
}

TEST(Truncation, SingleSequenceKeepsTheStart) {
  auto tok = letters();
  for (Truncation t : {Truncation::longest_first, Truncation::only_first}) {
    EXPECT_EQ(tok.encode("a b c d e", {.truncation = t, .max_length = 5}).input_ids, (Ids{kCls, 5, 6, 7, kSep}));
  }
  // only_second has nothing to cut in a single sequence.
  EXPECT_EQ(tok.encode("a b c d e", {.truncation = Truncation::only_second, .max_length = 5}).size(), 7);
  EXPECT_EQ(tok.encode("a b c d e", {.truncation = Truncation::do_not_truncate, .max_length = 5}).size(), 7);
  // Already short enough: unchanged.
  EXPECT_EQ(tok.encode("a b", {.truncation = Truncation::longest_first, .max_length = 5}).size(), 4);
}

TEST(Truncation, DefaultsToModelMaxLength) {
  auto tok = make_tokenizer({"a", "b", "c", "d", "e", "f", "g"}, {.model_max_length = 4});
  EXPECT_EQ(tok.encode("a b c d", {.truncation = Truncation::longest_first}).input_ids, (Ids{kCls, 5, 6, kSep}));
}

TEST(Truncation, LongestFirstOnPairs) {
  auto tok = letters();
  // 5 + 2 + 3 specials = 10 tokens, max 8: remove 2, both from the longer first sequence.
  text::Encoding e = tok.encode("a b c d e", "f g", {.truncation = Truncation::longest_first, .max_length = 8});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, 7, kSep, 10, 11, kSep}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 0, 1, 1, 1}));
  // 4 + 3 + 3 = 10, max 6: remove 4: the difference (1) from the first, then the other 3 split 1 : 2.
  e = tok.encode("a b c d", "e f g", {.truncation = Truncation::longest_first, .max_length = 6});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, kSep, 9, kSep}));
  // Equal lengths 3 + 3 + 3 = 9, max 6: remove 3 = 1 from the first, 2 from the second.
  e = tok.encode("a b c", "d e f", {.truncation = Truncation::longest_first, .max_length = 6});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, kSep, 8, kSep}));
  // Shorter first sequence: 2 + 4 + 3 = 9, max 7: both from the second.
  e = tok.encode("a b", "c d e f", {.truncation = Truncation::longest_first, .max_length = 7});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, kSep, 7, 8, kSep}));
}

TEST(Truncation, OnlyFirstAndOnlySecond) {
  auto tok = letters();
  EXPECT_EQ(tok.encode("a b c d", "e f", {.truncation = Truncation::only_first, .max_length = 6}).input_ids,
            (Ids{kCls, 5, kSep, 9, 10, kSep}));
  EXPECT_EQ(tok.encode("a b", "c d e f", {.truncation = Truncation::only_second, .max_length = 6}).input_ids,
            (Ids{kCls, 5, 6, kSep, 7, kSep}));
  // Cutting the whole chosen sequence is not allowed: the pair is left as it is (Hugging Face logs an error).
  EXPECT_EQ(tok.encode("a", "b c d e", {.truncation = Truncation::only_first, .max_length = 5}).size(), 8);
  EXPECT_EQ(tok.encode("a b c d", "e", {.truncation = Truncation::only_second, .max_length = 5}).size(), 8);
}

TEST(Padding, MaxLengthPadsEveryField) {
  auto tok = letters();
  text::Encoding e =
      tok.encode("a b", {.padding = Padding::max_length, .max_length = 6, .return_special_tokens_mask = true});
  EXPECT_EQ(e.input_ids, (Ids{kCls, 5, 6, kSep, kPad, kPad}));
  EXPECT_EQ(e.attention_mask, (Ids{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(e.special_tokens_mask, (Ids{1, 0, 0, 1, 1, 1}));
  // A longer sequence is not cut by padding alone.
  EXPECT_EQ(tok.encode("a b c d e f", {.padding = Padding::max_length, .max_length = 6}).size(), 8);
}

TEST(Padding, PadToMultipleOf) {
  auto tok = letters();
  EXPECT_EQ(tok.encode("a b c", {.padding = Padding::longest, .pad_to_multiple_of = 4}).input_ids,
            (Ids{kCls, 5, 6, 7, kSep, kPad, kPad, kPad}));
  EXPECT_EQ(tok.encode("a b", {.padding = Padding::longest, .pad_to_multiple_of = 4}).size(), 4);
  // max_length 6 rounds up to 8.
  EXPECT_EQ(tok.encode("a", {.padding = Padding::max_length, .max_length = 6, .pad_to_multiple_of = 4}).size(), 8);
  // Without padding the multiple does nothing.
  EXPECT_EQ(tok.encode("a b c", {.pad_to_multiple_of = 4}).size(), 5);
}

TEST(Padding, TruncationAndMultipleMustAgree) {
  auto tok = letters();
  const std::string message = error_message<ValueError>([&] {
    tok.encode("a", {.padding = Padding::max_length,
                     .truncation = Truncation::longest_first,
                     .max_length = 10,
                     .pad_to_multiple_of = 4});
  });
  EXPECT_TRUE(contains(message, "not a multiple of pad_to_multiple_of 4")) << message;
  EXPECT_EQ(tok.encode("a b c d e f g", {.padding = Padding::max_length,
                                         .truncation = Truncation::longest_first,
                                         .max_length = 8,
                                         .pad_to_multiple_of = 4})
                .input_ids,
            (Ids{kCls, 5, 6, 7, 8, 9, 10, kSep}));
}

TEST(Padding, NegativeSizesAreErrors) {
  auto tok = letters();
  EXPECT_TRUE(contains(error_message<ValueError>([&] { tok.encode("a", {.max_length = -1}); }), "max_length"));
  EXPECT_TRUE(
      contains(error_message<ValueError>([&] { tok.encode("a", {.pad_to_multiple_of = -8}); }), "pad_to_multiple_of"));
}

TEST(EncodeBatch, PadsToTheLongest) {
  auto tok = letters();
  text::BatchEncoding b = tok.encode_batch({"a", "a b c", "a b"}, {.padding = Padding::longest});
  ASSERT_EQ(b.encodings.size(), 3u);
  EXPECT_EQ(b.encodings[0].input_ids, (Ids{kCls, 5, kSep, kPad, kPad}));
  EXPECT_EQ(b.encodings[0].attention_mask, (Ids{1, 1, 1, 0, 0}));
  EXPECT_EQ(b.encodings[1].input_ids, (Ids{kCls, 5, 6, 7, kSep}));
  b = tok.encode_batch({"a", "a b c"}, {.padding = Padding::longest, .pad_to_multiple_of = 8});
  EXPECT_EQ(b.encodings[0].size(), 8);
  EXPECT_EQ(b.encodings[1].size(), 8);
  // No padding: each keeps its length.
  b = tok.encode_batch({"a", "a b c"});
  EXPECT_EQ(b.encodings[0].size(), 3);
  EXPECT_EQ(b.encodings[1].size(), 5);
}

TEST(EncodeBatch, Pairs) {
  auto tok = letters();
  text::BatchEncoding b = tok.encode_batch({"a", "b c"}, {"d e", "f"}, {.padding = Padding::longest});
  EXPECT_EQ(b.encodings[0].input_ids, (Ids{kCls, 5, kSep, 8, 9, kSep}));
  EXPECT_EQ(b.encodings[0].token_type_ids, (Ids{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(b.encodings[1].input_ids, (Ids{kCls, 6, 7, kSep, 10, kSep}));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { tok.encode_batch({"a"}, {"b", "c"}); }), "1 texts but 2"));
}

TEST(EncodeBatch, SameAsSequentialAtOneAndTwoThreads) {
  auto tok = make_tokenizer({"a", "b", "c", "##b", "##c", "d", ",", "\u00e9t\u00e9"});
  std::vector<std::string> texts;
  for (int i = 0; i < 500; ++i) {
    std::string t;
    for (int k = 0; k <= i % 13; ++k) t += (k % 3 == 0 ? "abc, " : k % 3 == 1 ? "\u00c9T\u00c9 " : "d x ");
    texts.push_back(t);
  }
  const text::EncodeOptions options{
      .padding = Padding::longest, .truncation = Truncation::longest_first, .max_length = 32, .pad_to_multiple_of = 8};
  std::vector<text::Encoding> expected;
  for (const std::string& t : texts)
    expected.push_back(tok.encode(t, {.truncation = Truncation::longest_first, .max_length = 32}));
  expected = tok.pad(expected, options).encodings;
  const int saved = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    text::BatchEncoding b = tok.encode_batch(texts, options);
    ASSERT_EQ(b.encodings.size(), expected.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
      EXPECT_EQ(b.encodings[i].input_ids, expected[i].input_ids) << "text " << i << ", threads " << threads;
      EXPECT_EQ(b.encodings[i].attention_mask, expected[i].attention_mask);
      EXPECT_EQ(b.encodings[i].token_type_ids, expected[i].token_type_ids);
    }
  }
  set_num_threads(saved);
}

TEST(EncodeBatch, ErrorNamesTheText) {
  auto tok = letters();
  const std::string message = error_message<ValueError>([&] { tok.encode_batch({"a", "b", "c\xff"}); });
  EXPECT_TRUE(contains(message, "text 2")) << message;
  EXPECT_TRUE(contains(message, "byte offset 1")) << message;
}

TEST(Pad, PadsEncodingsFromElsewhere) {
  auto tok = letters();
  std::vector<text::Encoding> encodings = {tok.encode("a", {.return_special_tokens_mask = true}),
                                           tok.encode("a b c", {.return_special_tokens_mask = true})};
  text::BatchEncoding b = tok.pad(encodings, {.padding = Padding::longest, .pad_to_multiple_of = 3});
  EXPECT_EQ(b.encodings[0].input_ids, (Ids{kCls, 5, kSep, kPad, kPad, kPad}));
  EXPECT_EQ(b.encodings[0].special_tokens_mask, (Ids{1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(b.encodings[0].token_type_ids, (Ids{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.encodings[1].attention_mask, (Ids{1, 1, 1, 1, 1, 0}));
  // Only input_ids given: pad adds the attention mask.
  b = tok.pad({text::Encoding{.input_ids = {5}}, text::Encoding{.input_ids = {5, 6, 7}}},
              {.padding = Padding::max_length, .max_length = 4});
  EXPECT_EQ(b.encodings[0].input_ids, (Ids{5, kPad, kPad, kPad}));
  EXPECT_EQ(b.encodings[0].attention_mask, (Ids{1, 0, 0, 0}));
  EXPECT_EQ(b.encodings[1].attention_mask, (Ids{1, 1, 1, 0}));
  EXPECT_TRUE(b.encodings[0].token_type_ids.empty());
}

TEST(Pad, RejectsFieldsOfTheWrongLength) {
  auto tok = letters();
  const std::string message = error_message<ValueError>([&] {
    tok.pad({text::Encoding{.input_ids = {5, 6}, .token_type_ids = {0}}}, {.padding = Padding::longest});
  });
  EXPECT_TRUE(contains(message, "encoding 0")) << message;
}

TEST(Pad, EmptySequenceGetsEveryRequestedField) {
  auto tok = letters();
  text::Encoding e = tok.encode("", {.add_special_tokens = false, .padding = Padding::max_length, .max_length = 3});
  EXPECT_EQ(e.input_ids, (Ids{kPad, kPad, kPad}));
  EXPECT_EQ(e.attention_mask, (Ids{0, 0, 0}));
  EXPECT_EQ(e.token_type_ids, (Ids{0, 0, 0}));
}

}  // namespace
}  // namespace kestrel::testing
