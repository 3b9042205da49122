#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/data/batching.h"
#include "framework/data/dataset.h"
#include "tests/framework/data/dataset_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using testing_util::ragged;

std::vector<std::vector<std::int64_t>> batch_shapes(const Dataset& ds, const std::string& key) {
  std::vector<std::vector<std::int64_t>> out;
  for (const Element& e : ds) out.push_back(e.tensor(key).shape().to_vector());
  return out;
}

TEST(Batch, StacksAndKeepsOrDropsTheRemainder) {
  Dataset ds = Dataset::range(7).batch(3);
  EXPECT_EQ(ds.cardinality(), 3);
  std::vector<Element> batches = ds.to_vector();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].tensor("value").to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(batches[2].tensor("value").to_vector<std::int64_t>(), (std::vector<std::int64_t>{6}));
  EXPECT_EQ(to_string(ds.element_spec()), "{value: int64[-1]}");

  Dataset dropped = Dataset::range(7).batch(3, {.drop_remainder = true});
  EXPECT_EQ(dropped.cardinality(), 2);
  EXPECT_EQ(dropped.to_vector().size(), 2u);
  EXPECT_EQ(to_string(dropped.element_spec()), "{value: int64[3]}");
}

TEST(Batch, StacksStringsAndMatrices) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Dataset ds = Dataset::from_tensor_slices({{"x", x}, {"s", Strings({"a", "b", "c", "d"})}}).batch(2);
  std::vector<Element> batches = ds.to_vector();
  EXPECT_EQ(batches[1].tensor("x").to_vector<float>(), (std::vector<float>{5, 6, 7, 8}));
  EXPECT_EQ(batches[1].strings("s").values(), (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(batches[1].strings("s").shape(), Shape({2}));
}

TEST(Batch, DifferentShapesPointToPaddedBatch) {
  std::string message = testing::error_message<ShapeError>([] { ragged({3, 5}).batch(2).to_vector(); });
  EXPECT_TRUE(testing::contains(message, "key 'ids' is int64[5] in element 1")) << message;
  EXPECT_TRUE(testing::contains(message, "padded_batch")) << message;
}

TEST(PaddedBatch, PadsToTheLongestWithThePaddingValue) {
  Dataset ds = ragged({2, 4, 3}).padded_batch(2, {.padding_values = {{"ids", -1}}});
  std::vector<Element> batches = ds.to_vector();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].tensor("ids").shape(), Shape({2, 4}));
  EXPECT_EQ(batches[0].tensor("ids").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1, -1, -1, 2, 2, 2, 2}));
  EXPECT_EQ(batches[1].tensor("ids").to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 3, 3}));
  EXPECT_EQ(batches[0].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(to_string(ds.element_spec()), "{ids: int64[-1,-1], label: int64[-1]}");
}

TEST(PaddedBatch, PadToMultipleOfRoundsTheLengthUp) {
  Dataset ds = ragged({3, 9, 17, 30, 33, 2}).padded_batch(2, {.pad_to_multiple_of = 8});
  EXPECT_EQ(batch_shapes(ds, "ids"), (std::vector<std::vector<std::int64_t>>{{2, 16}, {2, 32}, {2, 40}}));
}

TEST(PaddedBatch, PaddedShapesFixTheLength) {
  Dataset ds = ragged({3, 5}).padded_batch(2, {.padded_shapes = {{"ids", {8}}}, .drop_remainder = true});
  EXPECT_EQ(batch_shapes(ds, "ids"), (std::vector<std::vector<std::int64_t>>{{2, 8}}));
  EXPECT_EQ(to_string(ds.element_spec()), "{ids: int64[2,8], label: int64[2]}");
  std::string message = testing::error_message<ShapeError>([] {
    ragged({3, 12}).padded_batch(2, {.padded_shapes = {{"ids", {8}}}}).to_vector();
  });
  EXPECT_TRUE(testing::contains(message, "length 12")) << message;
  EXPECT_TRUE(testing::contains(message, "max_length")) << message;
}

TEST(PaddedBatch, PadsEveryDimensionOfMatrices) {
  Element a{{"m", Tensor::from_vector<float>({1, 2}, {1, 2})}};
  Element b{{"m", Tensor::from_vector<float>({3, 4, 5}, {3, 1})}};
  Dataset ds = Dataset::from_generator(
      [a, b]() -> Generator {
        return [a, b, i = 0]() mutable -> std::optional<Element> {
          if (i == 2) return std::nullopt;
          return i++ == 0 ? a : b;
        };
      },
      {});
  Element batch = ds.padded_batch(2).to_vector().at(0);
  EXPECT_EQ(batch.tensor("m").shape(), Shape({2, 3, 2}));
  EXPECT_EQ(batch.tensor("m").to_vector<float>(), (std::vector<float>{1, 2, 0, 0, 0, 0, 3, 0, 4, 0, 5, 0}));
}

TEST(PaddingStats, CountsDistinctShapesAndEfficiency) {
  Dataset ds = ragged({3, 5, 8, 8}).padded_batch(2);
  ds.to_vector();
  PaddingReport r = ds.padding_stats();
  EXPECT_EQ(r.batches, 2);
  EXPECT_EQ(r.distinct_shapes, 2);          // [2,5] and [2,8]
  EXPECT_EQ(r.real_values, 3 + 5 + 8 + 8);  // the scalar labels are not padded and not counted
  EXPECT_EQ(r.padded_values, 2 * 5 + 2 * 8);
  EXPECT_NEAR(r.efficiency(), 24.0 / 26.0, 1e-12);
  EXPECT_EQ(r.to_string(), "2 distinct batch shapes, padding efficiency 92.3% over 2 batches");

  ds.to_vector();  // a second pass adds batches, not shapes
  EXPECT_EQ(ds.padding_stats().batches, 4);
  EXPECT_EQ(ds.padding_stats().distinct_shapes, 2);
  ds.reset_padding_stats();
  EXPECT_EQ(ds.padding_stats().batches, 0);
}

TEST(PaddingStats, PadToMultipleOfTradesEfficiencyForFewerShapes) {
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 64; ++i) lengths.push_back(5 + (i * 37) % 60);
  Dataset exact = ragged(lengths).padded_batch(4);
  Dataset rounded = ragged(lengths).padded_batch(4, {.pad_to_multiple_of = 32});
  exact.to_vector();
  rounded.to_vector();
  EXPECT_LT(rounded.padding_stats().distinct_shapes, exact.padding_stats().distinct_shapes);
  EXPECT_LE(rounded.padding_stats().distinct_shapes, 2);
  EXPECT_LT(rounded.padding_stats().efficiency(), exact.padding_stats().efficiency());
}

TEST(BucketBySequenceLength, GroupsByLengthWithPerBucketBatchSizes) {
  // Buckets: [0,4) batch 2, [4,8) batch 3, [8,..) batch 2.
  Dataset ds =
      ragged({1, 9, 5, 2, 6, 7, 10, 3})
          .bucket_by_sequence_length([](const Element& e) { return e.tensor("ids").shape()[0]; }, {4, 8}, {2, 3, 2});
  std::vector<Element> batches = ds.to_vector();
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches[0].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3}));     // 1, 2
  EXPECT_EQ(batches[1].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 4, 5}));  // 5, 6, 7
  EXPECT_EQ(batches[2].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 6}));     // 9, 10
  EXPECT_EQ(batches[3].tensor("label").to_vector<std::int64_t>(), (std::vector<std::int64_t>{7}));        // leftover 3
  EXPECT_EQ(batches[1].tensor("ids").shape(), Shape({3, 7}));
  EXPECT_EQ(ds.padding_stats().batches, 4);
}

TEST(BucketBySequenceLength, PadToBucketBoundaryGivesOneShapePerBucket) {
  Dataset ds = ragged({1, 2, 5, 6})
                   .bucket_by_sequence_length([](const Element& e) { return e.tensor("ids").shape()[0]; }, {4, 8},
                                              {2, 2, 2}, {.pad_to_bucket_boundary = true});
  EXPECT_EQ(batch_shapes(ds, "ids"), (std::vector<std::vector<std::int64_t>>{{2, 3}, {2, 7}}));
  std::string message = testing::error_message<ValueError>([] {
    ragged({9})
        .bucket_by_sequence_length([](const Element& e) { return e.tensor("ids").shape()[0]; }, {4, 8}, {2, 2, 2},
                                   {.pad_to_bucket_boundary = true})
        .to_vector();
  });
  EXPECT_TRUE(testing::contains(message, "beyond the last boundary 8")) << message;
}

TEST(BucketBySequenceLength, MeasuresPaddingInTheSequencesItBuckets) {
  // Two keys of the measured length would count every token twice; the statistics count tokens.
  Dataset ds = ragged({1, 2, 5, 6, 7})
                   .map([](Element e) {
                     e.set("mask", e.tensor("ids"));
                     return e;
                   })
                   .bucket_by_sequence_length([](const Element& e) { return e.tensor("ids").shape()[0]; }, {4}, {2, 2},
                                              {.pad_to_multiple_of = 4});
  ds.to_vector();
  const PaddingReport r = ds.padding_stats();
  EXPECT_EQ(r.real_values, 1 + 2 + 5 + 6 + 7);
  EXPECT_EQ(r.padded_values, 2 * 4 + 2 * 8 + 1 * 8);  // {1, 2} to 4, {5, 6} to 8, {7} to 8
}

TEST(BucketBySequenceLength, RejectsMismatchedBatchSizes) {
  std::string message = testing::error_message<ValueError>([] {
    ragged({1}).bucket_by_sequence_length([](const Element&) { return 1; }, {4, 8}, {2, 2});
  });
  EXPECT_TRUE(testing::contains(message, "one batch size per bucket")) << message;
}

TEST(Collate, HandsGroupsToTheCollatorAndMeasuresPaddingFromTheAttentionMask) {
  auto collator = [](const std::vector<Element>& group) {
    std::int64_t longest = 0;
    for (const Element& e : group) longest = std::max(longest, e.tensor("ids").shape()[0]);
    std::vector<std::int64_t> mask;
    for (const Element& e : group) {
      for (std::int64_t i = 0; i < longest; ++i) mask.push_back(i < e.tensor("ids").shape()[0] ? 1 : 0);
    }
    return Element{{"attention_mask", Tensor::from_vector(mask, {static_cast<std::int64_t>(group.size()), longest})}};
  };
  Dataset ds = ragged({2, 4, 1}).collate(2, collator);
  EXPECT_EQ(ds.cardinality(), 2);
  std::vector<Element> batches = ds.to_vector();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].tensor("attention_mask").shape(), Shape({2, 4}));
  PaddingReport r = ds.padding_stats();
  EXPECT_EQ(r.real_values, 7);
  EXPECT_EQ(r.padded_values, 9);
  EXPECT_EQ(r.distinct_shapes, 2);
}

}  // namespace
}  // namespace kestrel::data

namespace kestrel::data {
namespace {

TEST(ElementSpec, AskingForItLeavesNoTrace) {
  Dataset ds = testing_util::ragged({2, 4, 3, 5}).shuffle(4, 9).collate(2, [](const std::vector<Element>& g) {
    return detail::stack_elements({g.front()}, "test");
  });
  Dataset reference = testing_util::ragged({2, 4, 3, 5}).shuffle(4, 9);
  ElementSpec spec = ds.element_spec();
  EXPECT_EQ(to_string(spec), "{ids: int64[-1,-1], label: int64[-1]}");
  EXPECT_EQ(ds.padding_stats().batches, 0);  // nothing recorded
  // The first pass's order is the one a dataset never asked for its spec gives.
  std::vector<std::int64_t> labels;
  for (const Element& e : ds) labels.push_back(e.tensor("label").to_vector<std::int64_t>()[0]);
  std::vector<std::int64_t> expected;
  int i = 0;
  for (const Element& e : reference) {
    if (i++ % 2 == 0) expected.push_back(e.tensor("label").to_vector<std::int64_t>()[0]);
  }
  EXPECT_EQ(labels, expected);
}

TEST(PaddedBatch, UnknownPaddingValueKeysAreErrors) {
  std::string message = testing::error_message<ValueError>([] {
    testing_util::ragged({2, 3}).padded_batch(2, {.padding_values = {{"input_id", 0}}}).to_vector();
  });
  EXPECT_TRUE(testing::contains(message, "padding_values names key 'input_id'")) << message;
}

TEST(BucketBySequenceLength, PadToBoundaryWithoutBoundariesIsAnError) {
  std::string message = testing::error_message<ValueError>([] {
    testing_util::ragged({2}).bucket_by_sequence_length([](const Element&) { return 1; }, {}, {2},
                                                        {.pad_to_bucket_boundary = true});
  });
  EXPECT_TRUE(testing::contains(message, "needs at least one boundary")) << message;
}

}  // namespace
}  // namespace kestrel::data
