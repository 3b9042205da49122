#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "datasets/text/data_collator.h"
#include "framework/core/error.h"
#include "tests/support/tensor_values.h"

namespace kestrel::text {
namespace {

using testing::int64s;

constexpr std::int64_t kPad = 0, kCls = 2, kSep = 3, kMask = 4, kFirstWord = 5;
constexpr std::int64_t kVocab = 100;

// [PAD] [UNK] [CLS] [SEP] [MASK] w5 ... w99
WordPieceTokenizer tokenizer() {
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (std::int64_t i = kFirstWord; i < kVocab; ++i) vocab.push_back(std::string(1, 'w').append(std::to_string(i)));
  return WordPieceTokenizer(vocab);
}

// [CLS] + `words` ordinary tokens + [SEP], with attention_mask.
data::Element example(std::int64_t words, std::int64_t offset = 0) {
  std::vector<std::int64_t> ids = {kCls};
  for (std::int64_t i = 0; i < words; ++i) ids.push_back(kFirstWord + (i + offset) % (kVocab - kFirstWord));
  ids.push_back(kSep);
  return data::Element{{"input_ids", int64s(ids)},
                       {"attention_mask", int64s(std::vector<std::int64_t>(ids.size(), 1))}};
}

// Examples of different lengths, so every batch has padding.
std::vector<data::Element> batch_of(std::int64_t size) {
  std::vector<data::Element> out;
  for (std::int64_t i = 0; i < size; ++i) out.push_back(example(20 + (i * 7) % 60, i));
  return out;
}

struct Counts {
  std::int64_t eligible = 0, selected = 0, masked = 0, kept = 0, replaced = 0;
};

// Checks the invariants of one masked batch against its padded original, and counts outcomes.
void check_masked_batch(const data::Element& original, const data::Element& masked, Counts& counts) {
  const auto before = original.tensor("input_ids").to_vector<std::int64_t>();
  const auto after = masked.tensor("input_ids").to_vector<std::int64_t>();
  const auto labels = masked.tensor("labels").to_vector<std::int64_t>();
  const auto attention = original.tensor("attention_mask").to_vector<std::int64_t>();
  ASSERT_EQ(masked.tensor("labels").shape(), original.tensor("input_ids").shape());
  ASSERT_EQ(masked.tensor("labels").dtype(), DType::int64);
  for (std::size_t i = 0; i < before.size(); ++i) {
    const bool special = before[i] == kCls || before[i] == kSep || before[i] == kPad;
    if (special || attention[i] == 0) {
      ASSERT_EQ(labels[i], kIgnoreIndex) << "special token or padding selected at " << i;
      ASSERT_EQ(after[i], before[i]);
      continue;
    }
    ++counts.eligible;
    if (labels[i] == kIgnoreIndex) {
      ASSERT_EQ(after[i], before[i]) << "a token changed without being selected at " << i;
      continue;
    }
    ASSERT_EQ(labels[i], before[i]) << "label is not the original token at " << i;
    ++counts.selected;
    if (after[i] == kMask) {
      ++counts.masked;
    } else if (after[i] == before[i]) {
      ++counts.kept;
    } else {
      ASSERT_GE(after[i], 0);
      ASSERT_LT(after[i], kVocab);
      ++counts.replaced;
    }
  }
}

TEST(DataCollatorForLanguageModeling, MasksFifteenPercentEightyTenTen) {
  const WordPieceTokenizer tok = tokenizer();
  DataCollatorForLanguageModeling collate(tok, {.seed = 1});
  DataCollatorWithPadding pad_only(tok);
  Counts counts;
  for (int step = 0; step < 40; ++step) {
    const auto features = batch_of(32);
    check_masked_batch(pad_only(features), collate(features), counts);
  }
  ASSERT_GT(counts.eligible, 50000);
  const double selected = static_cast<double>(counts.selected);
  EXPECT_NEAR(selected / counts.eligible, 0.15, 0.005);
  EXPECT_NEAR(counts.masked / selected, 0.8, 0.015);
  // A random draw may hit the original token (1 in 100) or [MASK]: close to 10% either way.
  EXPECT_NEAR(counts.kept / selected, 0.1 + 0.001, 0.01);
  EXPECT_NEAR(counts.replaced / selected, 0.1 - 0.002, 0.01);
  EXPECT_EQ(collate.calls(), 40u);
}

TEST(DataCollatorForLanguageModeling, ReproducibleWithASeedFreshEachBatch) {
  const auto features = batch_of(16);
  DataCollatorForLanguageModeling a(tokenizer(), {.seed = 7});
  DataCollatorForLanguageModeling b(tokenizer(), {.seed = 7});
  DataCollatorForLanguageModeling other_seed(tokenizer(), {.seed = 8});
  const data::Element first_a = a(features);
  EXPECT_EQ(first_a, b(features));
  EXPECT_NE(first_a.tensor("labels").to_vector<std::int64_t>(),
            other_seed(features).tensor("labels").to_vector<std::int64_t>());
  // The next batch gets new masks. A copy counts on from the original's count, on its own.
  DataCollatorForLanguageModeling copy = a;
  const data::Element second_a = copy(features);
  EXPECT_NE(first_a.tensor("labels").to_vector<std::int64_t>(), second_a.tensor("labels").to_vector<std::int64_t>());
  EXPECT_EQ(copy.calls(), 2u);
  EXPECT_EQ(a.calls(), 1u);
  EXPECT_EQ(second_a, b(features));
  EXPECT_EQ(a(features), second_a);  // the original's second batch: the same masks as the copy's
}

TEST(DataCollatorForLanguageModeling, HonoursSpecialTokensMaskAndDropsIt) {
  // Every ordinary token marked special: nothing may be selected even with mlm_probability = 1.
  data::Element e = example(10);
  e.set("special_tokens_mask", int64s(std::vector<std::int64_t>(12, 1)));
  data::Element shorter = example(4);
  shorter.set("special_tokens_mask", int64s(std::vector<std::int64_t>(6, 1)));
  auto batch = DataCollatorForLanguageModeling(tokenizer(), {.mlm_probability = 1.0})({e, shorter});
  EXPECT_FALSE(batch.contains("special_tokens_mask"));
  EXPECT_EQ(batch.tensor("labels").to_vector<std::int64_t>(), std::vector<std::int64_t>(24, kIgnoreIndex));
}

TEST(DataCollatorForLanguageModeling, ProbabilityOneSelectsEveryRealToken) {
  const auto features = batch_of(4);
  auto batch = DataCollatorForLanguageModeling(
      tokenizer(), {.mlm_probability = 1.0, .mask_replace_prob = 1.0, .random_replace_prob = 0.0})(features);
  const auto original = DataCollatorWithPadding(tokenizer())(features).tensor("input_ids").to_vector<std::int64_t>();
  const auto ids = batch.tensor("input_ids").to_vector<std::int64_t>();
  const auto labels = batch.tensor("labels").to_vector<std::int64_t>();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const bool special = original[i] == kCls || original[i] == kSep || original[i] == kPad;
    EXPECT_EQ(ids[i], special ? original[i] : kMask);
    EXPECT_EQ(labels[i], special ? kIgnoreIndex : original[i]);
  }
  auto none = DataCollatorForLanguageModeling(tokenizer(), {.mlm_probability = 0.0})(features);
  EXPECT_EQ(none.tensor("input_ids").to_vector<std::int64_t>(), original);
}

TEST(DataCollatorForLanguageModeling, CausalLabelsIgnorePadding) {
  auto batch =
      DataCollatorForLanguageModeling(tokenizer(), {.mlm = false, .pad_to_multiple_of = 8})({example(2), example(4)});
  EXPECT_EQ(batch.tensor("input_ids").shape(), (Shape{2, 8}));
  EXPECT_EQ(batch.tensor("input_ids").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 5, 6, 3, 0, 0, 0, 0, 2, 5, 6, 7, 8, 3, 0, 0}));
  EXPECT_EQ(batch.tensor("labels").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 5, 6, 3, -100, -100, -100, -100, 2, 5, 6, 7, 8, 3, -100, -100}));
  EXPECT_EQ(batch.tensor("attention_mask").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0}));
}

TEST(DataCollatorForLanguageModeling, StacksOtherValues) {
  data::Element a = example(3), b = example(5);
  a.set("doc", Tensor::scalar(4, DType::int64));
  b.set("doc", Tensor::scalar(9, DType::int64));
  auto batch = DataCollatorForLanguageModeling(tokenizer())({a, b});
  EXPECT_EQ(batch.tensor("doc").to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 9}));
  EXPECT_EQ(batch.tensor("input_ids").shape(), (Shape{2, 7}));
}

TEST(DataCollatorForLanguageModeling, Errors) {
  const WordPieceTokenizer tok = tokenizer();
  EXPECT_THROW(DataCollatorForLanguageModeling(tok, {.mlm_probability = 1.5}), ValueError);
  EXPECT_THROW(DataCollatorForLanguageModeling(tok, {.mlm_probability = -0.1}), ValueError);
  EXPECT_THROW(DataCollatorForLanguageModeling(tok, {.mask_replace_prob = 0.9, .random_replace_prob = 0.2}),
               ValueError);
  EXPECT_THROW(DataCollatorForLanguageModeling(tok, {.random_replace_prob = -0.5}), ValueError);
  EXPECT_NO_THROW(DataCollatorForLanguageModeling(tok, {.mlm = false, .mlm_probability = 7}));
  EXPECT_THROW(DataCollatorForLanguageModeling{tok}({}), ValueError);

  std::optional<WordPieceTokenizer> no_mask;
  TokenizerOptions without_mask;
  without_mask.mask_token = "";
  try {
    no_mask.emplace(std::vector<std::string>{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"}, without_mask);
  } catch (const Error& e) {
    GTEST_SKIP() << "the tokenizer rejects a vocabulary without [MASK]: " << e.what();
  }
  try {
    DataCollatorForLanguageModeling collate(*no_mask);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(".mlm = false"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(DataCollatorForLanguageModeling(*no_mask, {.mlm = false}));
}

}  // namespace
}  // namespace kestrel::text
