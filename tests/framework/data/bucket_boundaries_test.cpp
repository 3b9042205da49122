// Bucket boundaries chosen from the data: the padded lengths that waste the fewest padding tokens
// for a budget of shapes, checked against an exhaustive search; and bucket_by_sequence_length
// choosing them itself.
#include "framework/data/bucket_boundaries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <set>

#include "framework/core/error.h"
#include "tests/framework/data/dataset_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel::data {
namespace {

using testing::contains;
using testing::error_message;

// Padded tokens when every length pads to the smallest chosen padded length holding it (the
// boundaries' form: one past each), or -1 when some length has none.
std::int64_t padded_tokens(const std::vector<std::int64_t>& lengths, const std::vector<std::int64_t>& boundaries) {
  std::int64_t total = 0;
  for (std::int64_t length : lengths) {
    const auto holder = std::upper_bound(boundaries.begin(), boundaries.end(), length);
    if (holder == boundaries.end()) return -1;
    total += *holder - 1;
  }
  return total;
}

// The fewest padded tokens over every choice of at most max_shapes multiples of m, by trying them all.
std::int64_t fewest_by_search(const std::vector<std::int64_t>& lengths, int max_shapes, std::int64_t m) {
  std::set<std::int64_t> candidates;
  for (std::int64_t length : lengths) candidates.insert((length + m - 1) / m * m);
  const std::vector<std::int64_t> all(candidates.begin(), candidates.end());
  std::int64_t best = -1;
  for (std::uint32_t mask = 1; mask < (1u << all.size()); ++mask) {
    if (std::popcount(mask) > max_shapes) continue;
    std::vector<std::int64_t> boundaries;
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (mask & (1u << i)) boundaries.push_back(all[i] + 1);
    }
    const std::int64_t tokens = padded_tokens(lengths, boundaries);
    if (tokens >= 0 && (best < 0 || tokens < best)) best = tokens;
  }
  return best;
}

TEST(ChooseBucketBoundaries, PadsTheHeadersExampleLeast) {
  const std::vector<std::int64_t> lengths = {5, 7, 9, 30, 31, 62};
  EXPECT_EQ(choose_bucket_boundaries(lengths, 2), (std::vector<std::int64_t>{10, 63}));
  EXPECT_EQ(choose_bucket_boundaries(lengths, 2, 8), (std::vector<std::int64_t>{33, 65}));
}

TEST(ChooseBucketBoundaries, MatchesAnExhaustiveSearch) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::int64_t> lengths(1 + random() % 30);
    const std::int64_t longest = 1 + static_cast<std::int64_t>(random() % 48);
    for (std::int64_t& length : lengths) length = 1 + static_cast<std::int64_t>(random()) % longest;
    const int max_shapes = 1 + trial % 4;
    const std::int64_t m = trial % 3 == 0 ? 1 : 4 * (trial % 3);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::vector<std::int64_t> boundaries = choose_bucket_boundaries(lengths, max_shapes, m);
    EXPECT_LE(boundaries.size(), static_cast<std::size_t>(max_shapes));
    EXPECT_TRUE(std::is_sorted(boundaries.begin(), boundaries.end()));
    for (std::int64_t b : boundaries) EXPECT_EQ((b - 1) % m, 0) << b;
    EXPECT_EQ(padded_tokens(lengths, boundaries), fewest_by_search(lengths, max_shapes, m));
  }
}

TEST(ChooseBucketBoundaries, OneShapePadsToTheLongestAndEnoughShapesPadNothing) {
  const std::vector<std::int64_t> lengths = {3, 3, 11, 6, 0};
  EXPECT_EQ(choose_bucket_boundaries(lengths, 1), (std::vector<std::int64_t>{12}));
  EXPECT_EQ(choose_bucket_boundaries(lengths, 1, 8), (std::vector<std::int64_t>{17}));
  EXPECT_EQ(choose_bucket_boundaries(lengths, 8), (std::vector<std::int64_t>{1, 4, 7, 12}));
}

TEST(ChooseBucketBoundaries, BadInputIsAnErrorNamingIt) {
  const std::vector<std::int64_t> lengths = {4};
  EXPECT_TRUE(contains(error_message<ValueError>([] { choose_bucket_boundaries({}, 4); }), "no lengths"));
  EXPECT_TRUE(contains(error_message<ValueError>([] {
                         const std::vector<std::int64_t> negative = {3, -2};
                         choose_bucket_boundaries(negative, 4);
                       }),
                       "length -2"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { choose_bucket_boundaries(lengths, 0); }),
                       "max_shapes must be >= 1, got 0"));
  EXPECT_TRUE(contains(error_message<ValueError>([&] { choose_bucket_boundaries(lengths, 4, 0); }),
                       "pad_to_multiple_of must be >= 1, got 0"));
}

std::int64_t ids_length(const Element& e) { return e.tensor("ids").shape()[0]; }

TEST(BucketBySequenceLengthWithABudget, ChoosesItsBoundariesFromTheData) {
  const std::vector<std::int64_t> lengths = {5, 30, 7, 62, 9, 31, 6, 8};
  const Dataset ds = testing_util::ragged(lengths).bucket_by_sequence_length(ids_length, {}, {2},
                                                                             {.drop_remainder = true, .max_shapes = 2});
  std::set<std::int64_t> padded_lengths;
  std::vector<std::int64_t> labels;
  for (const Element& batch : ds) {
    padded_lengths.insert(batch.tensor("ids").shape()[1]);
    for (std::int64_t label : batch.tensor("label").to_vector<std::int64_t>()) labels.push_back(label);
  }
  // The lengths {5, 6, 7, 8, 9} pad to 9 and {30, 31, 62} to 62; each bucket's odd one out (the
  // 8 and the 31, the last to arrive) is dropped with drop_remainder.
  EXPECT_EQ(padded_lengths, (std::set<std::int64_t>{9, 62}));
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(labels, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 6}));
}

TEST(BucketBySequenceLengthWithABudget, RoundsToTheMultipleAndRefusesWhatItCannotChooseFor) {
  const Dataset ds = testing_util::ragged({5, 13, 20})
                         .bucket_by_sequence_length(ids_length, {}, {1}, {.pad_to_multiple_of = 8, .max_shapes = 1});
  for (const Element& batch : ds) EXPECT_EQ(batch.tensor("ids").shape()[1], 24);
  const std::string message = error_message<ValueError>(
      [] { testing_util::ragged({5}).repeat().bucket_by_sequence_length(ids_length, {}, {1}, {.max_shapes = 1}); });
  EXPECT_TRUE(contains(message, "is infinite; bucket before repeat()")) << message;
  const std::string both = error_message<ValueError>([] {
    testing_util::ragged({5}).bucket_by_sequence_length(ids_length, {8}, {1, 1}, {.max_shapes = 2});
  });
  EXPECT_TRUE(contains(both, "give no bucket_boundaries and one batch size for every bucket")) << both;
}

}  // namespace
}  // namespace kestrel::data
