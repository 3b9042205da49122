// OrderedGradientSum: replicas add their gradients in replica order, whichever finishes first.
#include "framework/model/ordered_gradient_sum.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/ops.h"

namespace kestrel::detail {
namespace {

std::vector<Tensor> gradients_of(float value) {
  return {Tensor::from_vector<float>({value, 2 * value}, {2}), Tensor()};  // the second reached no weight
}

TEST(OrderedGradientSum, AddsInReplicaOrderWhateverOrderReplicasFinish) {
  // 1e8 + 1 - 1e8 is 0 in float32 and 1e8 - 1e8 + 1 is 1: the order shows in the result.
  const std::vector<float> values = {1e8f, 1.0f, -1e8f};
  OrderedGradientSum sum(3);
  std::vector<std::thread> replicas;
  for (int r : {2, 1, 0})
    replicas.emplace_back([&, r] { sum.add(r, gradients_of(values[static_cast<std::size_t>(r)])); });
  for (std::thread& t : replicas) t.join();
  const std::vector<Tensor> total = sum.take();
  EXPECT_EQ(total[0].to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));  // ((1e8 + 1) - 1e8)
  EXPECT_FALSE(total[1].defined());
}

TEST(OrderedGradientSum, SumsBfloat16InFloat32AndRoundsOnce) {
  // 256 + 1 + 1 in bfloat16 (8 bits of mantissa): rounding after each add gives 256, once at the end 258.
  OrderedGradientSum sum(3);
  for (int r = 0; r < 3; ++r) {
    sum.add(r, {ops::cast(Tensor::from_vector<float>({r == 0 ? 256.0f : 1.0f}, {1}), DType::bfloat16)});
  }
  const std::vector<Tensor> total = sum.take();
  EXPECT_EQ(total[0].dtype(), DType::bfloat16);
  EXPECT_EQ(ops::cast(total[0], DType::float32).to_vector<float>(), (std::vector<float>{258.0f}));
}

TEST(OrderedGradientSum, AbandonReleasesReplicasWaitingForTheirTurn) {
  OrderedGradientSum sum(3);
  std::thread waiting([&] { sum.add(2, gradients_of(1.0f)); });  // waits for replicas 0 and 1
  sum.abandon();
  waiting.join();
  EXPECT_THROW(sum.take(), ValueError);
}

TEST(OrderedGradientSum, ReplicasMustAgreeOnWhichGradientsExist) {
  OrderedGradientSum sum(2);
  sum.add(0, gradients_of(1.0f));
  EXPECT_THROW(sum.add(1, {Tensor::ones({2}), Tensor::ones({2})}), ValueError);
}

}  // namespace
}  // namespace kestrel::detail
