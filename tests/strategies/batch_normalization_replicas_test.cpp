// BatchNormalization under strategies of several replicas. Synchronized, every replica normalizes
// with the global batch's statistics and its gradient sums every replica's cotangents, so 8
// replicas train like 1 on the same global batch, eagerly and compiled. Not synchronized, each
// replica normalizes its shard and the shared moving statistics take the mean of the replicas'.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/distribute/replica_context.h"
#include "framework/jit/replicated_function.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/collective.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

constexpr int kReplicas = 8;
constexpr std::int64_t kRows = 2;  // per replica: a global batch of 16

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tolerance,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tolerance * (1.0 + std::abs(want[i]))) << what << " element " << i;
  }
}

Tensor shard(const Tensor& global, int replica) {
  return ops::slice_rows(global, replica * kRows, (replica + 1) * kRows);
}

// What one training call of the layer gives: its output, and the gradients of
// sum(output * cotangent) in x, gamma and beta.
struct Results {
  Tensor y, dx, dgamma, dbeta;
};

std::vector<Tensor> train_call(layers::BatchNormalization& norm, const Tensor& x, const Tensor& cotangent) {
  GradientTape tape;
  tape.watch(x);
  const Tensor y = norm(x, /*training=*/true);
  std::vector<Tensor> out{y};
  for (const Tensor& g :
       tape.gradient(ops::sum(ops::multiply(y, cotangent)), {x, norm.gamma().value(), norm.beta().value()}))
    out.push_back(g);
  return out;
}

// Every replica's results joined as the global batch's: rows concatenated, weight gradients summed
// (what the optimizer's all-reduce would do).
Results join(const std::vector<std::vector<Tensor>>& per_replica) {
  std::vector<Tensor> ys, dxs;
  Tensor dgamma, dbeta;
  for (const std::vector<Tensor>& r : per_replica) {
    ys.push_back(r[0]);
    dxs.push_back(r[1]);
    dgamma = dgamma.defined() ? ops::add(dgamma, r[2]) : r[2];
    dbeta = dbeta.defined() ? ops::add(dbeta, r[3]) : r[3];
  }
  return {ops::concat(ys), ops::concat(dxs), dgamma, dbeta};
}

// A layer with a gain and an offset other than ones and zeros, built on [rows, 3] inputs.
void build_with_weights(layers::BatchNormalization& norm) {
  norm(Tensor::zeros({kRows, 3}));
  norm.gamma().assign(Tensor::from_vector<float>({1.5f, -0.5f, 2}, {3}));
  norm.beta().assign(Tensor::from_vector<float>({0.25f, 1, -1}, {3}));
}

struct NormBatch {
  Tensor x = ops::add(ops::multiply(random::normal({kReplicas * kRows, 3}, random::Key(1)), Tensor::scalar(2.0)),
                      Tensor::scalar(1.0));
  Tensor cotangent = random::normal({kReplicas * kRows, 3}, random::Key(2));
};

// 8 replicas on shards of 2 rows, eagerly (each its own thread; the statistics' collective meets
// the others in the forward and the backward pass) or as one compiled replica step.
Results run_replicas(const Strategy& strategy, layers::BatchNormalization& norm, const NormBatch& batch,
                     bool compiled) {
  if (compiled) {
    jit::ReplicatedFunction step(
        norm.weights(), [&](const jit::Args& args) { return train_call(norm, args.at("x"), args.at("cotangent")); },
        "batch_normalization_step", strategy);
    std::vector<jit::Args> args;
    for (int r = 0; r < kReplicas; ++r) {
      args.push_back({{"x", shard(batch.x, r)}, {"cotangent", shard(batch.cotangent, r)}});
    }
    return join(step(args));
  }
  std::vector<std::vector<Tensor>> per_replica(kReplicas);
  strategy.run([&](int r) {
    per_replica[static_cast<std::size_t>(r)] = train_call(norm, shard(batch.x, r), shard(batch.cotangent, r));
    return per_replica[static_cast<std::size_t>(r)][0];
  });
  return join(per_replica);
}

TEST(BatchNormalizationReplicas, SynchronizedReplicasNormalizeAndDifferentiateAsTheGlobalBatch) {
  const NormBatch batch;
  layers::BatchNormalization one({.synchronized = true});
  build_with_weights(one);
  const std::vector<Tensor> want = train_call(one, batch.x, batch.cotangent);

  TPUStrategy tpu(TPUClusterResolver::local());
  for (const bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    auto scope = tpu.scope();
    layers::BatchNormalization norm({.synchronized = true});
    build_with_weights(norm);
    const Results got = run_replicas(tpu, norm, batch, compiled);
    expect_near(values(got.y), values(want[0]), 1e-5, "output");
    // Each row's gradient reaches every replica's loss through the global statistics.
    expect_near(values(got.dx), values(want[1]), 1e-5, "input gradient");
    expect_near(values(got.dgamma), values(want[2]), 1e-5, "gamma gradient");
    expect_near(values(got.dbeta), values(want[3]), 1e-5, "beta gradient");
    expect_near(values(norm.moving_mean().value()), values(one.moving_mean().value()), 1e-6, "moving_mean");
    expect_near(values(norm.moving_variance().value()), values(one.moving_variance().value()), 1e-6, "moving_variance");
  }
}

TEST(BatchNormalizationReplicas, UnsynchronizedReplicasNormalizeTheirShardsAndAverageTheMovingStatistics) {
  const NormBatch batch;
  // Each shard's statistics, and their mean over the replicas (TF's MEAN aggregation).
  std::vector<double> mean_of_means(3, 0.0), mean_of_variances(3, 0.0);
  std::vector<std::vector<double>> shard_outputs;
  for (int r = 0; r < kReplicas; ++r) {
    layers::BatchNormalization alone;
    build_with_weights(alone);
    shard_outputs.push_back(values(alone(shard(batch.x, r), /*training=*/true)));
    const std::vector<double> m = values(alone.moving_mean().value()), v = values(alone.moving_variance().value());
    for (std::size_t f = 0; f < 3; ++f) {
      mean_of_means[f] += m[f] / 0.01 / kReplicas;               // moving = 0 * 0.99 + mean * 0.01
      mean_of_variances[f] += (v[f] - 0.99) / 0.01 / kReplicas;  // moving = 1 * 0.99 + variance * 0.01
    }
  }
  MirroredStrategy mirrored({.num_replicas = kReplicas});
  for (const bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    auto scope = mirrored.scope();
    layers::BatchNormalization norm;
    build_with_weights(norm);
    const Results got = run_replicas(mirrored, norm, batch, compiled);
    const std::vector<double> y = values(got.y);
    for (int r = 0; r < kReplicas; ++r) {
      const std::vector<double> rows(y.begin() + r * kRows * 3, y.begin() + (r + 1) * kRows * 3);
      expect_near(rows, shard_outputs[static_cast<std::size_t>(r)], 1e-5, "replica " + std::to_string(r));
    }
    std::vector<double> moving_mean(3), moving_variance(3);
    for (std::size_t f = 0; f < 3; ++f) {
      moving_mean[f] = 0.01 * mean_of_means[f];
      moving_variance[f] = 0.99 + 0.01 * mean_of_variances[f];
    }
    expect_near(values(norm.moving_mean().value()), moving_mean, 1e-5, "moving_mean");
    expect_near(values(norm.moving_variance().value()), moving_variance, 1e-5, "moving_variance");
  }
}

// The MLP's 12 features, or the CNN's 6x6 single-channel images (channels last: the statistics
// reduce the batch, height and width). The layer before the normalization has no bias, as usual:
// the normalization would cancel it, leaving it a gradient of rounding noise that Adam's
// normalized steps would turn into moves of the learning rate's size.
enum class NormalizedNet { mlp, cnn };

Sequential make_normalized(NormalizedNet net) {
  if (net == NormalizedNet::mlp) {
    return Sequential({layers::Dense(16, {.use_bias = false}),
                       layers::BatchNormalization({.momentum = 0.9, .synchronized = true}), layers::Activation("relu"),
                       layers::Dense(3)});
  }
  return Sequential({layers::Conv2D(4, {3, 3}, {.use_bias = false}),
                     layers::BatchNormalization({.momentum = 0.9, .synchronized = true}), layers::Activation("relu"),
                     layers::MaxPooling2D(), layers::Flatten(), layers::Dense(3)});
}

struct BatchNormRun {
  std::vector<Tensor> weights;  // the moving statistics included
  std::vector<double> losses;
  Logs evaluated;
  std::vector<double> moving_mean;
};

// A fresh model (seed 5) trained for 20 steps of a global batch of 16 under `strategy` (null: no
// scope), then evaluated with the moving statistics.
BatchNormRun train_batch_norm(const Strategy* strategy, bool jit, NormalizedNet net) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  Sequential model = make_normalized(net);
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .jit_compile = jit});
  const Shape features = net == NormalizedNet::mlp ? Shape{160, 12} : Shape{160, 6, 6, 1};
  const Tensor x = ops::add(random::normal(features, random::Key(40)), Tensor::scalar(0.5));
  const Tensor y = random::randint({160}, random::Key(41), 0, 3);
  BatchNormRun run;
  run.losses = model.fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false}).history.at("loss");
  run.weights = model.get_weights();
  for (const Layer* layer : model.layers()) {
    if (const auto* norm = dynamic_cast<const layers::BatchNormalization*>(layer)) {
      run.moving_mean = values(norm->moving_mean().value());
    }
  }
  run.evaluated = model.evaluate(x, y, {.batch_size = 16, .verbose = 0});
  return run;
}

void expect_close(const BatchNormRun& got, const BatchNormRun& want, double tolerance) {
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (std::size_t i = 0; i < want.weights.size(); ++i) {
    expect_near(values(got.weights[i]), values(want.weights[i]), tolerance, "weight " + std::to_string(i));
  }
  expect_near(got.losses, want.losses, tolerance, "epoch losses");
  EXPECT_NEAR(got.evaluated.at("loss"), want.evaluated.at("loss"), tolerance * (1 + want.evaluated.at("loss")));
}

TEST(BatchNormalizationReplicas, EightSynchronizedReplicasTrainLikeOneEagerlyAndCompiled) {
  TPUStrategy tpu(TPUClusterResolver::local());
  MirroredStrategy mirrored({.num_replicas = kReplicas});
  const BatchNormRun eager_one = train_batch_norm(nullptr, false, NormalizedNet::mlp);
  const BatchNormRun compiled_one = train_batch_norm(nullptr, true, NormalizedNet::mlp);
  expect_close(compiled_one, eager_one, 1e-5);  // eager == jit_compile
  // The moving statistics moved from zeros and ones: the layer trained.
  EXPECT_EQ(eager_one.weights.size(), 7u);
  ASSERT_EQ(eager_one.moving_mean.size(), 16u);
  EXPECT_GT(std::abs(eager_one.moving_mean[0]) + std::abs(eager_one.moving_mean[1]), 1e-3);
  {
    SCOPED_TRACE("TPUStrategy, eager");
    expect_close(train_batch_norm(&tpu, false, NormalizedNet::mlp), eager_one, 1e-5);
  }
  {
    SCOPED_TRACE("TPUStrategy, compiled");
    expect_close(train_batch_norm(&tpu, true, NormalizedNet::mlp), compiled_one, 1e-5);
  }
  {
    SCOPED_TRACE("MirroredStrategy, compiled");
    expect_close(train_batch_norm(&mirrored, true, NormalizedNet::mlp), eager_one, 1e-5);
  }
}

TEST(BatchNormalizationReplicas, EightSynchronizedReplicasTrainAConvolutionalNetLikeOne) {
  TPUStrategy tpu(TPUClusterResolver::local());
  const BatchNormRun one = train_batch_norm(nullptr, false, NormalizedNet::cnn);
  for (const bool jit : {false, true}) {
    SCOPED_TRACE(jit ? "compiled" : "eager");
    expect_close(train_batch_norm(&tpu, jit, NormalizedNet::cnn), one, 1e-5);
  }
}

TEST(BatchNormalizationReplicas, CrossReplicaSumMeetsTheOtherReplicasEagerly) {
  TPUStrategy tpu(TPUClusterResolver::local());
  std::vector<std::vector<float>> sums(kReplicas), gradients(kReplicas);
  tpu.run([&](int r) {
    const Tensor mine = Tensor::full({2}, static_cast<double>(r));
    GradientTape tape;
    tape.watch(mine);
    const Tensor sum = ops::cross_replica_sum(mine, kReplicas);
    // Replica r's loss weighs the sum by r + 1: every replica's input reaches all the losses.
    const Tensor loss = ops::sum(ops::multiply(sum, Tensor::scalar(static_cast<double>(r + 1))));
    sums[static_cast<std::size_t>(r)] = sum.to_vector<float>();
    gradients[static_cast<std::size_t>(r)] = tape.gradient(loss, {mine})[0].to_vector<float>();
    return sum;
  });
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_EQ(sums[static_cast<std::size_t>(r)], (std::vector<float>{28, 28})) << "replica " << r;       // 0 + ... + 7
    EXPECT_EQ(gradients[static_cast<std::size_t>(r)], (std::vector<float>{36, 36})) << "replica " << r;  // 1 + ... + 8
  }
}

TEST(BatchNormalizationReplicas, SynchronizedStatisticsInAReplicaThatRunsAloneNameTheLayer) {
  clear_session();
  layers::BatchNormalization norm({.synchronized = true});
  norm(Tensor::ones({2, 3}));
  const ReplicaScope alone(0, kReplicas);  // a replica context with no step to meet the others in
  const std::string m = error_message<ValueError>([&] { norm(Tensor::ones({2, 3}), /*training=*/true); });
  EXPECT_TRUE(contains(m,
                       "layer 'batch_normalization' (BatchNormalization): synchronized statistics need the 8 "
                       "replicas to meet"))
      << m;
  EXPECT_TRUE(contains(m, "synchronized = false")) << m;
}

}  // namespace
}  // namespace kestrel::distribute
