#include "datasets/text/data_collator.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "tests/support/tensor_values.h"

namespace kestrel::text {
namespace {

using testing::int64s;

// ids: [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4 the=5 cat=6 sat=7 on=8 mat=9
WordPieceTokenizer tiny_tokenizer() {
  return WordPieceTokenizer({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat"});
}

// One tokenized example as the tokenizer's map_fn makes it, plus a class label.
data::Element example(const std::vector<std::int64_t>& ids, std::int64_t label) {
  return data::Element{{"input_ids", int64s(ids)},
                       {"token_type_ids", int64s(std::vector<std::int64_t>(ids.size(), 0))},
                       {"attention_mask", int64s(std::vector<std::int64_t>(ids.size(), 1))},
                       {"label", Tensor::scalar(static_cast<double>(label), DType::int64)}};
}

TEST(DataCollatorWithPadding, PadsToTheLongestAndRenamesLabel) {
  DataCollatorWithPadding collate(tiny_tokenizer());
  data::Element batch = collate({example({2, 5, 6, 3}, 1), example({2, 5, 6, 7, 8, 9, 3}, 0)});
  EXPECT_EQ(batch.keys(), (std::vector<std::string>{"attention_mask", "input_ids", "labels", "token_type_ids"}));
  EXPECT_EQ(batch.tensor("input_ids").shape(), (Shape{2, 7}));
  EXPECT_EQ(batch.tensor("input_ids").dtype(), DType::int64);
  EXPECT_EQ(batch.tensor("input_ids").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 5, 6, 3, 0, 0, 0, 2, 5, 6, 7, 8, 9, 3}));
  EXPECT_EQ(batch.tensor("attention_mask").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(batch.tensor("token_type_ids").to_vector<std::int64_t>(), std::vector<std::int64_t>(14, 0));
  EXPECT_EQ(batch.tensor("labels").shape(), (Shape{2}));
  EXPECT_EQ(batch.tensor("labels").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
}

TEST(DataCollatorWithPadding, PadToMultipleOfAndMaxLength) {
  const auto features = std::vector<data::Element>{example({2, 5, 3}, 0), example({2, 5, 6, 7, 8, 3}, 1)};
  EXPECT_EQ(DataCollatorWithPadding(tiny_tokenizer(), {.pad_to_multiple_of = 4})(features).tensor("input_ids").shape(),
            (Shape{2, 8}));
  EXPECT_EQ(DataCollatorWithPadding(tiny_tokenizer(), {.pad_to_multiple_of = 3})(features).tensor("input_ids").shape(),
            (Shape{2, 6}));
  auto fixed = DataCollatorWithPadding(tiny_tokenizer(), {.padding = Padding::max_length, .max_length = 10})(features);
  EXPECT_EQ(fixed.tensor("input_ids").shape(), (Shape{2, 10}));
  EXPECT_EQ(fixed.tensor("attention_mask").to_vector<std::int64_t>()[9], 0);
}

TEST(DataCollatorWithPadding, AddsAnAttentionMaskWhenMissing) {
  data::Element a{{"input_ids", int64s({2, 5, 3})}};
  data::Element b{{"input_ids", int64s({2, 3})}};
  data::Element batch = DataCollatorWithPadding(tiny_tokenizer())({a, b});
  EXPECT_EQ(batch.tensor("attention_mask").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_FALSE(batch.contains("token_type_ids"));
}

TEST(DataCollatorWithPadding, StacksOtherValuesAndRenamesLabelIds) {
  data::Element a{{"input_ids", int64s({2, 5, 3})},
                  {"label_ids", int64s({1, 0})},
                  {"text", data::Strings("the")},
                  {"weight", Tensor::scalar(0.5)}};
  data::Element b{{"input_ids", int64s({2, 3})},
                  {"label_ids", int64s({0, 1})},
                  {"text", data::Strings("")},
                  {"weight", Tensor::scalar(2.0)}};
  data::Element batch = DataCollatorWithPadding(tiny_tokenizer())({a, b});
  EXPECT_FALSE(batch.contains("label_ids"));
  EXPECT_EQ(batch.tensor("labels").shape(), (Shape{2, 2}));
  EXPECT_EQ(batch.tensor("labels").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(batch.strings("text").values(), (std::vector<std::string>{"the", ""}));
  EXPECT_EQ(batch.strings("text").shape(), (Shape{2}));
  EXPECT_EQ(batch.tensor("weight").dtype(), DType::float32);
  EXPECT_EQ(batch.tensor("weight").to_vector<float>(), (std::vector<float>{0.5f, 2.0f}));
}

TEST(DataCollatorWithPadding, KeepsSpecialTokensMaskPaddedAsSpecial) {
  data::Element a{{"input_ids", int64s({2, 5, 3})}, {"special_tokens_mask", int64s({1, 0, 1})}};
  data::Element b{{"input_ids", int64s({2, 3})}, {"special_tokens_mask", int64s({1, 1})}};
  data::Element batch = DataCollatorWithPadding(tiny_tokenizer())({a, b});
  EXPECT_EQ(batch.tensor("special_tokens_mask").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 0, 1, 1, 1, 1}));
}

TEST(DataCollatorWithPadding, CollatesADataset) {
  const std::vector<data::Element> examples = {example({2, 5, 3}, 0), example({2, 5, 6, 7, 3}, 1),
                                               example({2, 9, 3}, 1), example({2, 3}, 0), example({2, 8, 8, 3}, 1)};
  data::ElementSpec spec = {{"input_ids", {{-1}, DType::int64}},
                            {"token_type_ids", {{-1}, DType::int64}},
                            {"attention_mask", {{-1}, DType::int64}},
                            {"label", {{}, DType::int64}}};
  auto ds = data::Dataset::from_generator(
      [examples] {
        return data::Generator([examples, i = std::size_t{0}]() mutable -> std::optional<data::Element> {
          if (i == examples.size()) return std::nullopt;
          return examples[i++];
        });
      },
      spec, static_cast<std::int64_t>(examples.size()));
  auto batches = ds.collate(2, DataCollatorWithPadding(tiny_tokenizer(), {.pad_to_multiple_of = 4})).to_vector();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].tensor("input_ids").shape(), (Shape{2, 8}));
  EXPECT_EQ(batches[1].tensor("input_ids").shape(), (Shape{2, 4}));
  EXPECT_EQ(batches[2].tensor("input_ids").shape(), (Shape{1, 4}));
  EXPECT_EQ(batches[2].tensor("labels").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1}));
}

TEST(DataCollatorWithPadding, CollatesTheTokenizersMapFnOutput) {
  const WordPieceTokenizer tok = tiny_tokenizer();
  auto ds = data::Dataset::from_tensor_slices(
                data::Element{{"text", data::Strings(std::vector<std::string>{"The cat sat", "the mat", "on"})},
                              {"label", Tensor::from_vector<std::int64_t>({1, 0, 1}, Shape{3})}})
                .map(tok.map_fn({.return_special_tokens_mask = true}));
  auto batch = ds.collate(3, DataCollatorWithPadding(tok)).to_vector().at(0);
  EXPECT_EQ(batch.tensor("input_ids").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{2, 5, 6, 7, 3, 2, 5, 9, 3, 0, 2, 8, 3, 0, 0}));
  EXPECT_EQ(batch.tensor("special_tokens_mask").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(batch.tensor("labels").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 1}));
  EXPECT_FALSE(batch.contains("text"));

  // The same examples through the masked-LM collator: only the real words (5..9) can be selected.
  auto masked = ds.collate(3, DataCollatorForLanguageModeling(tok, {.mlm_probability = 1.0})).to_vector().at(0);
  EXPECT_FALSE(masked.contains("special_tokens_mask"));
  EXPECT_EQ(masked.tensor("labels").to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{-100, 5, 6, 7, -100, -100, 5, 9, -100, -100, -100, 8, -100, -100, -100}));
}

TEST(DataCollatorWithPadding, OutlivesTheTokenizer) {
  std::optional<WordPieceTokenizer> tok(tiny_tokenizer());
  DataCollatorWithPadding collate(*tok);
  tok.reset();
  EXPECT_EQ(collate({example({2, 3}, 0), example({2, 5, 3}, 1)}).tensor("input_ids").shape(), (Shape{2, 3}));
}

TEST(DataCollatorWithPadding, Errors) {
  DataCollatorWithPadding collate(tiny_tokenizer());
  EXPECT_THROW(collate({}), ValueError);
  EXPECT_THROW(collate({data::Element{{"label", Tensor::scalar(1, DType::int64)}}}), ValueError);
  // Examples disagreeing on the tokenizer's keys or on the other keys.
  EXPECT_THROW(collate({example({2, 3}, 0), data::Element{{"input_ids", int64s({2, 3})}}}), ValueError);
  data::Element no_label = example({2, 3}, 0);
  no_label.erase("label");
  EXPECT_THROW(collate({example({2, 3}, 0), no_label}), ValueError);
  // Already batched input_ids, float ids, masks of the wrong length.
  data::Element batched{{"input_ids", Tensor::from_vector<std::int64_t>({2, 3, 2, 3}, Shape{2, 2})}};
  EXPECT_THROW(collate({batched}), ShapeError);
  data::Element floats{{"input_ids", Tensor::from_vector<float>({2, 3}, Shape{2})}};
  EXPECT_THROW(collate({floats}), TypeError);
  data::Element short_mask{{"input_ids", int64s({2, 5, 3})}, {"attention_mask", int64s({1, 1})}};
  EXPECT_THROW(collate({short_mask}), ShapeError);
  // Both label and labels: renaming would silently drop one.
  data::Element both = example({2, 3}, 0);
  both.set("labels", Tensor::scalar(1, DType::int64));
  EXPECT_THROW(collate({both}), ValueError);
  // Other values that cannot be stacked.
  data::Element a{{"input_ids", int64s({2, 3})}, {"extra", int64s({1, 2})}};
  data::Element b{{"input_ids", int64s({2, 3})}, {"extra", int64s({1, 2, 3})}};
  EXPECT_THROW(collate({a, b}), ShapeError);
  // Without padding, different lengths cannot make one tensor.
  EXPECT_THROW(DataCollatorWithPadding(tiny_tokenizer(),
                                       {.padding = Padding::do_not_pad})({example({2, 3}, 0), example({2, 5, 3}, 1)}),
               ValueError);
  EXPECT_THROW(DataCollatorWithPadding(tiny_tokenizer(), {.pad_to_multiple_of = -1}), ValueError);
}

}  // namespace
}  // namespace kestrel::text
