#include "framework/data/bucket_boundaries.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>

#include "framework/core/error.h"

namespace kestrel::data {
namespace {

void check(std::span<const std::int64_t> lengths, int max_shapes, std::int64_t pad_to_multiple_of) {
  const std::string who = "choose_bucket_boundaries: ";
  if (lengths.empty()) throw ValueError(who + "no lengths to choose boundaries for (the dataset is empty)");
  if (max_shapes < 1) {
    throw ValueError(who + "max_shapes must be >= 1, got " + std::to_string(max_shapes));
  }
  if (pad_to_multiple_of < 1) {
    throw ValueError(who + "pad_to_multiple_of must be >= 1, got " + std::to_string(pad_to_multiple_of));
  }
  const std::int64_t shortest = *std::min_element(lengths.begin(), lengths.end());
  if (shortest < 0) throw ValueError(who + "a sequence has length " + std::to_string(shortest));
}

}  // namespace

std::vector<std::int64_t> choose_bucket_boundaries(std::span<const std::int64_t> lengths, int max_shapes,
                                                   std::int64_t pad_to_multiple_of) {
  check(lengths, max_shapes, pad_to_multiple_of);
  // The distinct padded lengths a sequence can take, and how many sequences round up to each.
  const std::int64_t m = pad_to_multiple_of;
  std::map<std::int64_t, std::int64_t> rounded_counts;
  for (std::int64_t length : lengths) ++rounded_counts[(length + m - 1) / m * m];
  std::vector<std::int64_t> padded, below{0};  // below[i]: sequences rounding to padded[0..i)
  for (const auto& [length, count] : rounded_counts) {
    padded.push_back(length);
    below.push_back(below.back() + count);
  }
  const auto distinct = static_cast<int>(padded.size());
  const int shapes = std::min(max_shapes, distinct);

  // cost[k][j]: the fewest padded tokens for the sequences rounding to padded[0..j] with k + 1
  // lengths, the largest padded[j]; from[k][j]: the previous chosen length's index (-1: none).
  // Sequences the last chosen length holds pad to it: padded[j] * (their count). Their own
  // lengths are the same whatever is chosen, so tokens stand for padding.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  std::vector<std::vector<std::int64_t>> cost(shapes, std::vector<std::int64_t>(distinct, kNone));
  std::vector<std::vector<int>> from(shapes, std::vector<int>(distinct, -1));
  for (int j = 0; j < distinct; ++j) cost[0][j] = padded[j] * below[j + 1];
  for (int k = 1; k < shapes; ++k) {
    for (int j = k; j < distinct; ++j) {
      for (int i = k - 1; i < j; ++i) {  // cost[k - 1][i] is set for every i >= k - 1
        const std::int64_t total = cost[k - 1][i] + padded[j] * (below[j + 1] - below[i + 1]);
        if (total < cost[k][j]) {
          cost[k][j] = total;
          from[k][j] = i;
        }
      }
    }
  }
  // The longest padded length is always chosen, and all `shapes` lengths are: every distinct
  // padded length holds some sequence, so one more length chosen below the next always pads less.
  std::vector<std::int64_t> boundaries;
  for (int k = shapes - 1, j = distinct - 1; k >= 0; j = from[k][j], --k) boundaries.push_back(padded[j] + 1);
  std::reverse(boundaries.begin(), boundaries.end());
  return boundaries;
}

}  // namespace kestrel::data
