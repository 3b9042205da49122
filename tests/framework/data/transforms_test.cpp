#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/dataset.h"
#include "tests/framework/data/dataset_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using testing_util::firsts;

std::vector<std::int64_t> iota(std::int64_t begin, std::int64_t end, std::int64_t step = 1) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = begin; i < end; i += step) out.push_back(i);
  return out;
}

TEST(Map, TransformsEachElement) {
  Dataset ds = Dataset::range(4).map([](Element e) {
    std::int64_t v = e.tensor("value").to_vector<std::int64_t>()[0];
    e.set("value", Tensor::from_vector<std::int64_t>({v * 10}, Shape()));
    e.set("text", Strings(std::to_string(v)));
    return e;
  });
  EXPECT_EQ(firsts(ds), (std::vector<std::int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(ds.cardinality(), 4);
  EXPECT_EQ(to_string(ds.element_spec()), "{text: string[], value: int64[]}");
}

TEST(Map, AMissingKeyNamesItAndTheKeysPresent) {
  Dataset ds = Dataset::range(2).map([](Element e) {
    e.tensor("input_ids");
    return e;
  });
  std::string message = testing::error_message<ValueError>([&] { ds.to_vector(); });
  EXPECT_TRUE(testing::contains(message, "no key 'input_ids'")) << message;
  EXPECT_TRUE(testing::contains(message, "[value]")) << message;
}

TEST(Filter, KeepsMatchingElementsAndMakesCardinalityUnknown) {
  Dataset ds = Dataset::range(10).filter(
      [](const Element& e) { return e.tensor("value").to_vector<std::int64_t>()[0] % 3 == 0; });
  EXPECT_EQ(firsts(ds), (std::vector<std::int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
}

TEST(Shuffle, IsAPermutationFixedByTheSeed) {
  Dataset a = Dataset::range(100).shuffle(16, 7);
  std::vector<std::int64_t> first = firsts(a);
  std::vector<std::int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(0, 100));
  EXPECT_NE(first, iota(0, 100));
  EXPECT_EQ(firsts(Dataset::range(100).shuffle(16, 7)), first);  // same seed, same order on every run
  EXPECT_NE(firsts(Dataset::range(100).shuffle(16, 8)), first);  // another seed, another order
}

TEST(Shuffle, ReshufflesEachPassUnlessAskedNotTo) {
  Dataset each = Dataset::range(50).shuffle(50, 3);
  std::vector<std::int64_t> pass0 = firsts(each);
  std::vector<std::int64_t> pass1 = firsts(each);
  EXPECT_NE(pass0, pass1);
  Dataset again = Dataset::range(50).shuffle(50, 3);
  EXPECT_EQ(firsts(again), pass0);  // pass k's order depends only on the seed and k
  EXPECT_EQ(firsts(again), pass1);

  Dataset fixed = Dataset::range(50).shuffle(50, 3, {.reshuffle_each_iteration = false});
  EXPECT_EQ(firsts(fixed), firsts(fixed));
}

TEST(Shuffle, UnseededOrderFollowsTheGlobalSeed) {
  random::set_global_seed(11);
  std::vector<std::int64_t> a = firsts(Dataset::range(40).shuffle(40));
  random::set_global_seed(11);
  EXPECT_EQ(firsts(Dataset::range(40).shuffle(40)), a);
}

TEST(Shuffle, ABufferOfOneKeepsTheOrder) {
  EXPECT_EQ(firsts(Dataset::range(10).shuffle(1, 5)), iota(0, 10));
  EXPECT_TRUE(testing::contains(testing::error_message<ValueError>([] { Dataset::range(3).shuffle(0); }),
                                "buffer_size must be >= 1"));
}

TEST(RepeatTakeSkipShard, SelectTheRightElements) {
  EXPECT_EQ(firsts(Dataset::range(3).repeat(2)), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Dataset::range(3).repeat(2).cardinality(), 6);
  EXPECT_EQ(Dataset::range(3).repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(firsts(Dataset::range(3).repeat().take(7)), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(Dataset::range(3).repeat().take(7).cardinality(), 7);
  EXPECT_EQ(firsts(Dataset::range(6).skip(4)), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(Dataset::range(6).skip(9).cardinality(), 0);
  EXPECT_EQ(firsts(Dataset::range(10).shard(3, 1)), (std::vector<std::int64_t>{1, 4, 7}));
  EXPECT_EQ(Dataset::range(10).shard(3, 1).cardinality(), 3);
  EXPECT_EQ(Dataset::range(10).shard(3, 0).cardinality(), 4);
  EXPECT_EQ(firsts(Dataset::range(0).repeat()), std::vector<std::int64_t>{});  // nothing to repeat ends
}

TEST(RepeatTakeSkipShard, ShardsCoverTheDatasetOnce) {
  std::vector<std::int64_t> all;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::int64_t> part = firsts(Dataset::range(23).shard(4, i));
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(0, 23));
}

TEST(RepeatTakeSkipShard, BadArgumentsSayWhatIsAllowed) {
  EXPECT_TRUE(testing::contains(testing::error_message<ValueError>([] { Dataset::range(3).shard(2, 2); }),
                                "0 <= index < num_shards"));
  EXPECT_TRUE(testing::contains(testing::error_message<ValueError>([] { Dataset::range(3).repeat(-3); }),
                                "-1 to repeat forever"));
}

TEST(IgnoreErrors, SkipsFailedElementsAndCountsThem) {
  Dataset ds = Dataset::range(6)
                   .map([](Element e) {
                     if (e.tensor("value").to_vector<std::int64_t>()[0] % 2 == 1) throw ValueError("odd value");
                     return e;
                   })
                   .ignore_errors();
  EXPECT_EQ(firsts(ds), (std::vector<std::int64_t>{0, 2, 4}));
  EXPECT_EQ(ds.ignored_errors(), 3);
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
}

TEST(Describe, ListsTheTransformsInOrder) {
  EXPECT_EQ(Dataset::range(4).shuffle(4, 1).batch(2).prefetch(1).describe(), "range -> shuffle -> batch -> prefetch");
}

}  // namespace
}  // namespace kestrel::data
