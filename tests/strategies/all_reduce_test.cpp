// all_reduce_sum: the fixed replica order bit for bit, at every thread count and inside replicas;
// bfloat16 and integer sums; undefined positions; the errors.
#include "strategies/all_reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "strategies/mirrored_strategy.h"
#include "tests/support/error_message.h"
#include "tests/support/same_bits.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::distribute {
namespace {

using kestrel::testing::same_bits;
using kestrel::testing::ThreadCountGuard;
using testing::contains;
using testing::error_message;
using ReplicaGradients = std::vector<std::vector<Tensor>>;  // all_reduce_sum's operand: each replica's list

// Values over many magnitudes, so that summing in another order changes the bits.
std::vector<float> spread_values(std::int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = std::ldexp(normal(rng), exponent(rng));
  return values;
}

// Shapes that cross the all-reduce's blocks and parallel chunks, and an empty and a scalar one.
const std::vector<Shape> kShapes = {{3, 5}, {}, {0, 4}, {1023}, {1025}, {70001}, {64, 300}};

ReplicaGradients float_replicas(int replicas, unsigned seed) {
  std::mt19937 rng(seed);
  ReplicaGradients per_replica(static_cast<std::size_t>(replicas));
  for (auto& tensors : per_replica) {
    for (const Shape& shape : kShapes) tensors.push_back(Tensor::from_vector(spread_values(shape.numel(), rng), shape));
  }
  return per_replica;
}

TEST(AllReduceSum, Float32EqualsTheNaiveReplicaOrderSumBitForBit) {
  for (int replicas : {1, 2, 3, 8}) {
    ReplicaGradients per_replica = float_replicas(replicas, 100 + replicas);
    std::vector<Tensor> sums = all_reduce_sum(per_replica);
    ASSERT_EQ(sums.size(), kShapes.size());
    for (std::size_t k = 0; k < kShapes.size(); ++k) {
      ASSERT_EQ(sums[k].spec(), (TensorSpec{kShapes[k], DType::float32}));
      const float* got = sums[k].data<float>();
      for (std::int64_t i = 0; i < kShapes[k].numel(); ++i) {
        float naive = per_replica[0][k].data<float>()[i];
        double exact = naive, magnitude = std::fabs(naive);
        for (int r = 1; r < replicas; ++r) {
          const float x = per_replica[static_cast<std::size_t>(r)][k].data<float>()[i];
          naive += x;
          exact += x;
          magnitude += std::fabs(x);
        }
        ASSERT_EQ(std::memcmp(&got[i], &naive, sizeof naive), 0)
            << "position " << k << " element " << i << ": " << got[i] << " vs " << naive << ", " << replicas
            << " replicas";
        // The naive sum itself is checked against double precision: within float's rounding of each add.
        ASSERT_LE(std::fabs(naive - exact), replicas * 6e-8 * magnitude) << "position " << k << " element " << i;
      }
    }
  }
}

TEST(AllReduceSum, SumsInReplicaOrder) {
  // ((1e8 + -1e8) + 1) is 1, but any order adding 1 to either big value first gives 0.
  ReplicaGradients per_replica = {{Tensor::from_vector<float>({1e8f}, {1})},
                                  {Tensor::from_vector<float>({-1e8f}, {1})},
                                  {Tensor::from_vector<float>({1.0f}, {1})}};
  EXPECT_EQ(all_reduce_sum(per_replica)[0].to_vector<float>(), std::vector<float>{1.0f});
  std::swap(per_replica[0], per_replica[2]);
  EXPECT_EQ(all_reduce_sum(per_replica)[0].to_vector<float>(), std::vector<float>{0.0f});
}

TEST(AllReduceSum, TheSameBitsAtEveryThreadCountAndOnEveryRun) {
  ThreadCountGuard guard;
  ReplicaGradients per_replica = float_replicas(8, 7);
  set_num_threads(1);
  const std::vector<Tensor> reference = all_reduce_sum(per_replica);
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    for (int run = 0; run < 3; ++run) {
      std::vector<Tensor> sums = all_reduce_sum(per_replica);
      for (std::size_t k = 0; k < sums.size(); ++k) {
        ASSERT_TRUE(same_bits(sums[k], reference[k])) << "position " << k << ", " << threads << " threads, run " << run;
      }
    }
  }
}

TEST(AllReduceSum, TheSameBitsInsideASerialReplica) {
  ReplicaGradients per_replica = float_replicas(4, 11);
  const std::vector<Tensor> reference = all_reduce_sum(per_replica);
  // Four replicas fill a pool of 2 or more threads: each runs its kernels serially.
  MirroredStrategy strategy({.num_replicas = std::max(4, num_threads())});
  std::vector<std::vector<Tensor>> results(static_cast<std::size_t>(strategy.num_replicas_in_sync()));
  strategy.for_each_replica(
      [&](int replica) { results[static_cast<std::size_t>(replica)] = all_reduce_sum(per_replica); });
  for (const auto& sums : results) {
    for (std::size_t k = 0; k < sums.size(); ++k) ASSERT_TRUE(same_bits(sums[k], reference[k])) << "position " << k;
  }
}

TEST(AllReduceSum, Bfloat16SumsInFloat32AndRoundsOnce) {
  // 256 + 1 is a tie that rounds back to 256 in bfloat16; rounding after each add would give 256,
  // rounding the float32 sum 263 once gives 264.
  ReplicaGradients per_replica(8);
  per_replica[0].push_back(Tensor::full({3}, 256.0, DType::bfloat16));
  for (std::size_t r = 1; r < 8; ++r) per_replica[r].push_back(Tensor::full({3}, 1.0, DType::bfloat16));
  Tensor sum = all_reduce_sum(per_replica)[0];
  EXPECT_EQ(sum.dtype(), DType::bfloat16);
  EXPECT_EQ(sum.to_vector<float>(), std::vector<float>(3, 264.0f));

  // And in general: the float32 replica-order sum of the bfloat16 values, rounded once.
  std::mt19937 rng(3);
  ReplicaGradients random_replicas(5);
  for (auto& tensors : random_replicas) {
    std::vector<bfloat16> values;
    for (float v : spread_values(5000, rng)) values.push_back(bfloat16(v));
    tensors.push_back(Tensor::from_vector(values, {5000}));
  }
  const Tensor sum_of_random = all_reduce_sum(random_replicas)[0];
  const bfloat16* got = sum_of_random.data<bfloat16>();
  for (std::int64_t i = 0; i < 5000; ++i) {
    float naive = random_replicas[0][0].data<bfloat16>()[i];
    for (std::size_t r = 1; r < 5; ++r) naive += static_cast<float>(random_replicas[r][0].data<bfloat16>()[i]);
    ASSERT_EQ(got[i].bits, bfloat16(naive).bits) << "element " << i;
  }
}

TEST(AllReduceSum, IntegersSumExactlyAndWrapOnOverflow) {
  const std::int32_t max32 = std::numeric_limits<std::int32_t>::max();
  const std::int64_t max64 = std::numeric_limits<std::int64_t>::max();
  ReplicaGradients per_replica = {
      {Tensor::from_vector<std::int32_t>({1, -7, max32}, {3}), Tensor::from_vector<std::int64_t>({5, max64}, {2})},
      {Tensor::from_vector<std::int32_t>({2, 3, 1}, {3}), Tensor::from_vector<std::int64_t>({-9, 1}, {2})},
      {Tensor::from_vector<std::int32_t>({3, 4, 0}, {3}), Tensor::from_vector<std::int64_t>({1000, 0}, {2})}};
  std::vector<Tensor> sums = all_reduce_sum(per_replica);
  EXPECT_EQ(sums[0].to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{6, 0, std::numeric_limits<std::int32_t>::min()}));
  EXPECT_EQ(sums[1].to_vector<std::int64_t>(),
            (std::vector<std::int64_t>{996, std::numeric_limits<std::int64_t>::min()}));
}

TEST(AllReduceSum, APositionUndefinedInEveryReplicaStaysUndefined) {
  ReplicaGradients per_replica = {{Tensor(), Tensor::ones({2})}, {Tensor(), Tensor::ones({2})}};
  std::vector<Tensor> sums = all_reduce_sum(per_replica);
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_FALSE(sums[0].defined());
  EXPECT_EQ(sums[1].to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(AllReduceSum, NoPositionsGiveNoSums) { EXPECT_TRUE(all_reduce_sum(ReplicaGradients{{}, {}, {}}).empty()); }

TEST(AllReduceSum, AllocatesOnlyTheOutputsAndSharesNoInput) {
  ReplicaGradients per_replica = float_replicas(3, 5);
  per_replica[0].push_back(Tensor());
  per_replica[1].push_back(Tensor());
  per_replica[2].push_back(Tensor());
  const std::int64_t before = allocator_stats().allocations;
  std::vector<Tensor> sums = all_reduce_sum(per_replica);
  EXPECT_EQ(allocator_stats().allocations - before, static_cast<std::int64_t>(kShapes.size()));
  for (std::size_t k = 0; k < kShapes.size(); ++k) {
    for (const auto& tensors : per_replica) EXPECT_NE(sums[k].buffer(), tensors[k].buffer()) << "position " << k;
  }
}

TEST(AllReduceSum, ErrorsForNoReplicasAndDifferentCounts) {
  std::string message = error_message<ValueError>([] { all_reduce_sum({}); });
  EXPECT_TRUE(contains(message, "[all_reduce_sum] got no replicas")) << message;

  ReplicaGradients per_replica = {
      {Tensor::ones({2}), Tensor::ones({2})}, {Tensor::ones({2}), Tensor::ones({2})}, {Tensor::ones({2})}};
  message = error_message<ValueError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "replica 2 has 1 tensors but replica 0 has 2")) << message;
}

TEST(AllReduceSum, ErrorForAPositionDefinedInSomeReplicasOnly) {
  ReplicaGradients per_replica = {{Tensor::ones({2}), Tensor::ones({4, 3})}, {Tensor::ones({2}), Tensor()}};
  std::string message = error_message<ValueError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "position 1 is undefined in replica 1 but float32[4,3] in replica 0")) << message;

  std::swap(per_replica[0], per_replica[1]);
  message = error_message<ValueError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "position 1 is undefined in replica 0 but float32[4,3] in replica 1")) << message;
}

TEST(AllReduceSum, ErrorsForADifferentShapeOrDtypeNameThePositionReplicaAndBothSpecs) {
  ReplicaGradients per_replica = {{Tensor::ones({2}), Tensor::ones({4, 3})},
                                  {Tensor::ones({2}), Tensor::ones({4, 3})},
                                  {Tensor::ones({2}), Tensor::ones({3, 4})}};
  std::string message = error_message<ShapeError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "position 1 of replica 2 is float32[3,4] but replica 0's is float32[4,3]")) << message;

  per_replica[2][1] = Tensor::ones({4, 3}, DType::bfloat16);
  message = error_message<TypeError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "position 1 of replica 2 is bfloat16[4,3] but replica 0's is float32[4,3]")) << message;
}

TEST(AllReduceSum, ErrorForBool) {
  ReplicaGradients per_replica = {{Tensor::ones({2}, DType::bool_)}, {Tensor::ones({2}, DType::bool_)}};
  std::string message = error_message<TypeError>([&] { all_reduce_sum(per_replica); });
  EXPECT_TRUE(contains(message, "position 0 is bool[2], and bool has no sum; cast to int32")) << message;
}

}  // namespace
}  // namespace kestrel::distribute
