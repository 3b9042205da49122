// A Functional model with two inputs and a shared layer trains under 8 replicas as under one,
// eagerly and compiled.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/tpu_strategy.h"

namespace kestrel::distribute {
namespace {

// The sum of a list of tensors (a merging layer of the test's own).
class SumOfInputs : public Layer {
 public:
  SumOfInputs() : Layer("SumOfInputs") {}
  Tensor call_list(const std::vector<Tensor>& xs, bool /*training*/) override { return ops::add(xs.at(0), xs.at(1)); }
};

// Weights after 2 epochs of 10 steps (global batch 16), the model built under `strategy` (null: none).
std::vector<Tensor> train_functional(const Strategy* strategy, bool jit) {
  clear_session();
  random::set_global_seed(9);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  const Tensor left = Input({6}, {.name = "left"});
  const Tensor right = Input({6}, {.name = "right"});
  layers::Dense shared(8, {.activation = "relu"});
  SumOfInputs sum;
  Model model({left, right}, layers::Dense(3)(sum(std::vector<Tensor>{shared(left), shared(right)})));
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  const Inputs x{{"left", random::normal({160, 6}, random::Key(1))},
                 {"right", random::normal({160, 6}, random::Key(2))}};
  const Tensor y = random::randint({160}, random::Key(3), 0, 3);
  model.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  return model.get_weights();
}

TEST(FunctionalReplicas, EightTrainLikeOneEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    const std::vector<Tensor> one = train_functional(nullptr, jit);
    const std::vector<Tensor> eight = train_functional(&tpu, jit);
    ASSERT_EQ(one.size(), 4U);
    ASSERT_EQ(eight.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      const std::vector<float> want = one[i].to_vector<float>(), got = eight[i].to_vector<float>();
      for (std::size_t k = 0; k < want.size(); ++k) {
        ASSERT_NEAR(got[k], want[k], 1e-5 * (1.0 + std::abs(want[k]))) << "weight " << i << " element " << k;
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::distribute
