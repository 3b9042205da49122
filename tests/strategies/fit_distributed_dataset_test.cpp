// fit, evaluate and predict over a dataset the strategy has distributed already, as Keras takes
// one: experimental_distribute_dataset's and distribute_datasets_from_function's steps train,
// evaluate and predict as the global batches they hold, bit for bit.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

// 100 samples: six global batches of 16 and one of 4 (a partial batch, padded and masked).
data::Dataset samples(std::int64_t n = 100) {
  return data::Dataset::from_tensor_slices(
      {{"x", random::normal({n, 12}, random::Key(40))}, {"labels", random::randint({n}, random::Key(41), 0, 3)}});
}

struct Outcome {
  std::vector<Tensor> weights;
  Logs evaluated;
  Tensor predicted;
};

// A fresh MLP (seed 5) under `strategy`, trained for 2 epochs, evaluated and run on what
// `data` gives: the dataset itself, or a distributed one made from it.
template <class Data>
Outcome train_and_run(const MirroredStrategy& strategy, bool jit, const std::function<Data()>& data) {
  clear_session();
  random::set_global_seed(5);
  auto scope = strategy.scope();
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"},
                 .jit_compile = jit});
  model.fit(data(), {.epochs = 2, .verbose = 0});
  return {model.get_weights(), model.evaluate(data(), {.verbose = 0}), model.predict(data(), {.verbose = 0})};
}

void expect_same_bits(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    EXPECT_EQ(a.weights[i].to_vector<float>(), b.weights[i].to_vector<float>()) << "weight " << i;
  }
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.predicted.shape(), b.predicted.shape());
  EXPECT_EQ(a.predicted.to_vector<float>(), b.predicted.to_vector<float>());
}

TEST(FitDistributedDataset, ExperimentalDistributeDatasetTrainsAsItsDataset) {
  const MirroredStrategy strategy({.num_replicas = 4});
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "jit" : "eager");
    const Outcome direct = train_and_run<data::Dataset>(strategy, jit, [] { return samples().batch(16); });
    const Outcome distributed = train_and_run<DistributedDataset>(
        strategy, jit, [&] { return strategy.experimental_distribute_dataset(samples().batch(16)); });
    expect_same_bits(direct, distributed);
    EXPECT_EQ(distributed.predicted.shape()[0], 100);
  }
}

TEST(FitDistributedDataset, DatasetsFromFunctionTrainAsTheirReplicasBatchesTogether) {
  const MirroredStrategy strategy({.num_replicas = 4});
  // Each replica's batch of 4: four consecutive ones are a global batch of 16.
  const Outcome direct = train_and_run<data::Dataset>(strategy, false, [] { return samples(96).batch(16); });
  const Outcome from_function = train_and_run<DistributedDataset>(strategy, false, [&] {
    return strategy.distribute_datasets_from_function(
        [](const InputContext& context) { return samples(96).batch(context.get_per_replica_batch_size(16)); });
  });
  expect_same_bits(direct, from_function);
}

TEST(FitDistributedDataset, ADatasetDistributedOverOtherReplicasIsAnError) {
  const MirroredStrategy four({.num_replicas = 4}), two({.num_replicas = 2});
  clear_session();
  auto scope = two.scope();
  Sequential model({layers::Dense(3)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  const std::string message = error_message<ValueError>(
      [&] { model.fit(four.experimental_distribute_dataset(samples().batch(16)), {.verbose = 0}); });
  EXPECT_TRUE(contains(message, "feeds 4 replicas")) << message;
  EXPECT_TRUE(contains(message, "runs 2")) << message;
}

}  // namespace
}  // namespace kestrel::distribute
