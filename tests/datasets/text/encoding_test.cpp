// Encodings as dataset elements: Encoding and BatchEncoding to int64 tensors, and map_fn.
#include <gtest/gtest.h>

#include <string>

#include "datasets/text/encoding.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "framework/data/dataset.h"
#include "tests/datasets/text/tokenizer_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

TEST(EncodingElement, RoundTrip) {
  text::Encoding e{.input_ids = {2, 5, 3}, .token_type_ids = {0, 0, 0}, .attention_mask = {1, 1, 1}};
  data::Element element = e.to_element();
  EXPECT_EQ(element.keys(), (std::vector<std::string>{"attention_mask", "input_ids", "token_type_ids"}));
  EXPECT_EQ(element.tensor("input_ids").dtype(), DType::int64);
  EXPECT_EQ(element.tensor("input_ids").shape(), (Shape{3}));
  text::Encoding back = text::Encoding::from_element(element);
  EXPECT_EQ(back.input_ids, e.input_ids);
  EXPECT_EQ(back.attention_mask, e.attention_mask);
  EXPECT_TRUE(back.special_tokens_mask.empty());
}

TEST(EncodingElement, FromElementChecksShapes) {
  data::Element missing{{"attention_mask", Tensor::from_vector<std::int64_t>({1}, {1})}};
  EXPECT_TRUE(contains(error_message<ValueError>([&] { text::Encoding::from_element(missing); }), "input_ids"));
  data::Element batched{{"input_ids", Tensor::from_vector<std::int64_t>({1, 2}, {1, 2})}};
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { text::Encoding::from_element(batched); }), "[1,2]"));
  data::Element uneven{{"input_ids", Tensor::from_vector<std::int64_t>({1, 2}, {2})},
                       {"attention_mask", Tensor::from_vector<std::int64_t>({1}, {1})}};
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { text::Encoding::from_element(uneven); }), "attention_mask"));
}

TEST(BatchEncodingElement, StacksPaddedSequences) {
  auto tok = make_tokenizer({"a", "b", "c"});
  data::Element batch = tok.encode_batch({"a", "a b c"}, {.padding = text::Padding::longest}).to_element();
  const Tensor& ids = batch.tensor("input_ids");
  EXPECT_EQ(ids.shape(), (Shape{2, 5}));
  EXPECT_EQ(ids.to_vector<std::int64_t>(), (Ids{kCls, 5, kSep, kPad, kPad, kCls, 5, 6, 7, kSep}));
  EXPECT_EQ(batch.tensor("attention_mask").to_vector<std::int64_t>(), (Ids{1, 1, 1, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(batch.tensor("token_type_ids").shape(), (Shape{2, 5}));
  EXPECT_FALSE(batch.contains("special_tokens_mask"));
}

TEST(BatchEncodingElement, UnpaddedIsAnErrorNamingTheFix) {
  auto tok = make_tokenizer({"a", "b"});
  const std::string message = error_message<ValueError>([&] { tok.encode_batch({"a", "a b"}).to_element(); });
  EXPECT_TRUE(contains(message, "Padding::longest")) << message;
}

TEST(MapFn, ReplacesTheTextWithTheEncoding) {
  auto tok = make_tokenizer({"hello", "world"});
  auto fn = tok.map_fn({.padding = text::Padding::max_length, .max_length = 6});
  data::Element element{{"text", data::Strings("Hello world")}, {"label", Tensor::scalar(1, DType::int64)}};
  data::Element out = fn(element);
  EXPECT_FALSE(out.contains("text"));
  EXPECT_TRUE(out.contains("label"));
  EXPECT_EQ(out.tensor("input_ids").to_vector<std::int64_t>(), (Ids{kCls, 5, 6, kSep, kPad, kPad}));
  EXPECT_EQ(out.tensor("attention_mask").to_vector<std::int64_t>(), (Ids{1, 1, 1, 1, 0, 0}));
}

TEST(MapFn, WorksInADatasetAndOutlivesTheTokenizer) {
  std::function<data::Element(data::Element)> fn;
  {
    auto tok = make_tokenizer({"hello", "world"});
    fn = tok.map_fn({}, "line");
  }
  data::Element source{{"line", data::Strings(std::vector<std::string>{"hello", "world hello"})}};
  auto dataset = data::Dataset::from_tensor_slices(source).map(fn);
  std::vector<Ids> got;
  for (const data::Element& e : dataset) got.push_back(e.tensor("input_ids").to_vector<std::int64_t>());
  EXPECT_EQ(got, (std::vector<Ids>{{kCls, 5, kSep}, {kCls, 6, 5, kSep}}));
}

TEST(MapFn, RejectsBatchedStrings) {
  auto tok = make_tokenizer({"a"});
  auto fn = tok.map_fn();
  data::Element batched{{"text", data::Strings(std::vector<std::string>{"a", "a"})}};
  EXPECT_TRUE(contains(error_message<ShapeError>([&] { fn(batched); }), "map before batching"));
}

}  // namespace
}  // namespace kestrel::testing
