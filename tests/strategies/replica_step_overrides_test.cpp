// Overrides of train_step, test_step and predict_step run on every replica, eagerly, and meet
// the other replicas where the model's state changes: optimizer.apply (the gradients summed,
// one update), the loss tracker and the metrics. 8 replicas then train like 1, whatever the
// override does; a replica that fails, or that skips a merge point, stops the step on every
// replica with the error, never a hang.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/distribute/replica_context.h"
#include "framework/jit/replicated_function.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/model.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "framework/optimizers/optimizers.h"
#include "strategies/mirrored_strategy.h"
#include "strategies/tpu_strategy.h"
#include "tests/support/error_message.h"

namespace kestrel::distribute {
namespace {

using testing::contains;
using testing::error_message;

// 12 features -> 16 -> 3 class scores.
class Mlp : public Model {
 public:
  Mlp() : hidden_(add<layers::Dense>(16, layers::DenseOptions{.activation = "relu"})), out_(add<layers::Dense>(3)) {}
  Tensor call(const Inputs& x, bool training) override { return out_(hidden_(x, training), training); }

 protected:
  layers::Dense& out() { return out_; }

  // The gradients of loss for every trainable weight, as a user's train_step computes them.
  std::vector<Tensor> gradients_of(GradientTape& tape, const Tensor& loss) {
    std::vector<Tensor> sources;
    for (const Variable& v : trainable_weights()) sources.push_back(v.value());
    return tape.gradient(loss, sources);
  }

 private:
  layers::Dense& hidden_;
  layers::Dense& out_;
};

// Reports its loss and metrics but applies no update: a frozen model.
class Frozen : public Mlp {
 protected:
  void train_step(const Batch& batch) override {
    autodiff::NoGradScope no_grad;
    const Tensor y_pred = (*this)(batch.x, /*training=*/true);
    track_loss(batch, compute_loss(batch, y_pred));
    update_metrics(batch, y_pred);
  }
};

// A second loss term, an L2 penalty on the output kernel, scaled for the replicas as Keras asks.
class Penalized : public Mlp {
 protected:
  void train_step(const Batch& batch) override {
    GradientTape tape;
    const Tensor y_pred = (*this)(batch.x, /*training=*/true);
    const Tensor loss = compute_loss(batch, y_pred);
    const Tensor penalty =
        losses::scale_loss_for_distribution(ops::sum(ops::square(out().weights()[0].value())) * 0.01);
    optimizer()->apply(gradients_of(tape, loss + penalty), trainable_weights());
    autodiff::NoGradScope no_grad;
    track_loss(batch, loss);
    update_metrics(batch, y_pred);
  }
};

// Two optimizers over two sets of weights, each a merge point, as a GAN's step has.
class TwoOptimizers : public Mlp {
 public:
  optimizers::SGD second{{.learning_rate = 0.05, .momentum = 0.5}};

 protected:
  void train_step(const Batch& batch) override {
    const std::vector<Variable> all = trainable_weights();
    const std::vector<Variable> hidden(all.begin(), all.begin() + 2), output(all.begin() + 2, all.end());
    for (int phase = 0; phase < 2; ++phase) {
      GradientTape tape;
      const Tensor y_pred = (*this)(batch.x, /*training=*/true);
      const Tensor loss = compute_loss(batch, y_pred);
      const std::vector<Variable>& updated = phase == 0 ? hidden : output;
      std::vector<Tensor> sources;
      for (const Variable& v : updated) sources.push_back(v.value());
      const std::vector<Tensor> gradients = tape.gradient(loss, sources);
      if (phase == 0) {
        optimizer()->apply(gradients, updated);
      } else {
        second.apply(gradients, updated);
        autodiff::NoGradScope no_grad;
        track_loss(batch, loss);
      }
    }
  }
};

// test_step and predict_step overrides: a loss of the mean absolute score, and probabilities.
class CustomEvaluation : public Mlp {
 protected:
  void test_step(const Batch& batch) override {
    autodiff::NoGradScope no_grad;
    track_loss(batch, losses::scale_loss_for_distribution(ops::mean(ops::abs((*this)(batch.x, false)))));
  }
  Outputs predict_step(const Inputs& x) override { return ops::softmax((*this)(x, false)); }
};

struct OverrideData {
  Tensor x, y;
};
OverrideData override_data(std::int64_t n, std::uint64_t seed) {
  return {random::normal({n, 12}, random::Key(seed)), random::randint({n}, random::Key(seed + 1), 0, 3)};
}

template <class M>
struct OverrideRun {
  std::unique_ptr<M> model;
  std::vector<Tensor> initial_weights, weights;
  History history;
};

// A fresh model of type M (seed 5), compiled with Adam and accuracy (and jit_compile if `jit`),
// trained 2 epochs over 64 samples at a global batch of 16, under `strategy` (null: no scope).
template <class M>
OverrideRun<M> train_override(const Strategy* strategy, bool jit = false) {
  clear_session();
  random::set_global_seed(5);
  std::optional<DistributionScope> scope;
  if (strategy != nullptr) scope.emplace(*strategy);
  OverrideRun<M> run{.model = std::make_unique<M>()};
  run.model->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                      .metrics = {"accuracy"},
                      .jit_compile = jit});
  run.model->build(Shape{1, 12});
  run.initial_weights = run.model->get_weights();
  const OverrideData data = override_data(64, 40);
  run.history = run.model->fit(data.x, data.y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  run.weights = run.model->get_weights();
  return run;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::vector<float> g = got[i].to_vector<float>(), w = want[i].to_vector<float>();
    for (std::size_t k = 0; k < w.size(); ++k) {
      ASSERT_NEAR(g[k], w[k], 1e-5 * (1.0 + std::abs(w[k]))) << what << ": weight " << i << " element " << k;
    }
  }
}

std::string mode(bool jit) { return jit ? "compiled" : "eager"; }

// Eager and compiled, on 1, 2 and 8 replicas: like one eager replica with no strategy.
template <class M>
void expect_replicas_train_like_one(const std::string& what) {
  const OverrideRun<M> one = train_override<M>(nullptr);
  for (const bool jit : {false, true}) {
    for (const int replicas : {1, 2, 8}) {
      MirroredStrategy strategy({.num_replicas = replicas});
      const OverrideRun<M> many = train_override<M>(&strategy, jit);
      const std::string where = what + ", " + mode(jit) + ", on " + std::to_string(replicas) + " replicas";
      expect_close(many.weights, one.weights, where);
      for (const auto& [key, values] : one.history.history) {
        EXPECT_NEAR(many.history.history.at(key).back(), values.back(), 1e-5) << where << ": " << key;
      }
    }
  }
}

TEST(ReplicaStepOverrides, AFrozenModelStaysFrozenOnEveryReplicaCount) {
  for (const auto& [replicas, jit] : {std::pair{1, false}, {2, false}, {8, false}, {1, true}, {2, true}, {8, true}}) {
    MirroredStrategy strategy({.num_replicas = replicas});
    const OverrideRun<Frozen> run = train_override<Frozen>(&strategy, jit);
    const std::string where = std::to_string(replicas) + " replicas, " + mode(jit);
    ASSERT_EQ(run.weights.size(), run.initial_weights.size());
    for (std::size_t i = 0; i < run.weights.size(); ++i) {
      EXPECT_EQ(run.weights[i].to_vector<float>(), run.initial_weights[i].to_vector<float>())
          << where << ", weight " << i;
    }
    EXPECT_GT(run.history.history.at("loss").back(), 0.5) << where;  // still reported
    EXPECT_TRUE(run.history.history.contains("accuracy")) << where;
  }
}

TEST(ReplicaStepOverrides, ASecondLossTermTrainsAlikeOnEightReplicas) {
  expect_replicas_train_like_one<Penalized>("a penalized train_step");
}

TEST(ReplicaStepOverrides, TwoOptimizersMeetTwiceAStepAndTrainAlike) {
  expect_replicas_train_like_one<TwoOptimizers>("a step with two optimizers");
}

TEST(ReplicaStepOverrides, TheDefaultStepTrainsAlikeOnEightReplicas) {
  expect_replicas_train_like_one<Mlp>("the default train_step");
}

class TestAndPredictOverrides : public ::testing::TestWithParam<bool> {};

TEST_P(TestAndPredictOverrides, RunOnEveryReplica) {
  const OverrideData test = override_data(40, 60);
  const OverrideRun<CustomEvaluation> one = train_override<CustomEvaluation>(nullptr);
  const Logs one_logs = one.model->evaluate(test.x, test.y, {.batch_size = 16, .verbose = 0});
  const std::vector<float> one_predicted = one.model->predict(test.x, {.batch_size = 16}).tensor().to_vector<float>();

  TPUStrategy tpu(TPUClusterResolver::local());
  const OverrideRun<CustomEvaluation> eight = train_override<CustomEvaluation>(&tpu, /*jit=*/GetParam());
  auto scope = tpu.scope();
  const Logs eight_logs = eight.model->evaluate(test.x, test.y, {.batch_size = 16, .verbose = 0});
  const std::vector<float> eight_predicted =
      eight.model->predict(test.x, {.batch_size = 16}).tensor().to_vector<float>();

  // The override tracks the loss only: the metrics stay empty, which the default step would fill.
  EXPECT_DOUBLE_EQ(one_logs.at("accuracy"), 0.0);
  EXPECT_DOUBLE_EQ(eight_logs.at("accuracy"), 0.0);
  EXPECT_NEAR(eight_logs.at("loss"), one_logs.at("loss"), 1e-5);
  ASSERT_EQ(one_predicted.size(), 40u * 3u);
  ASSERT_EQ(eight_predicted.size(), one_predicted.size());
  EXPECT_NEAR(eight_predicted[0] + eight_predicted[1] + eight_predicted[2], 1.0f, 1e-5);  // predict_step's softmax
  for (std::size_t i = 0; i < one_predicted.size(); ++i) EXPECT_NEAR(eight_predicted[i], one_predicted[i], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(EagerAndCompiled, TestAndPredictOverrides, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) { return mode(info.param); });

// Fails on one replica: the step stops on all of them and fit throws that replica's error.
class FailsOnReplicaThree : public Mlp {
 protected:
  void train_step(const Batch& batch) override {
    if (replica_context()->replica_id == 3) throw ValueError("replica three cannot go on");
    Model::train_step(batch);
  }
};

TEST(ReplicaStepOverrides, AReplicaThatThrowsStopsTheStepOnEveryReplica) {
  TPUStrategy tpu(TPUClusterResolver::local());
  const std::string m = error_message<ValueError>([&] { train_override<FailsOnReplicaThree>(&tpu); });
  EXPECT_EQ(m, "replica three cannot go on");
}

// Replica 1 skips the update the others make: an error naming the merge point, not a hang.
class SkipsTheUpdateOnReplicaOne : public Mlp {
 protected:
  void train_step(const Batch& batch) override {
    if (replica_context()->replica_id == 1) return;
    Model::train_step(batch);
  }
};

TEST(ReplicaStepOverrides, AReplicaThatSkipsAMergePointIsAnErrorNamingIt) {
  MirroredStrategy strategy({.num_replicas = 4});
  const std::string m = error_message<ValueError>([&] { train_override<SkipsTheUpdateOnReplicaOne>(&strategy); });
  EXPECT_TRUE(contains(m, "merge point 'optimizer.apply'")) << m;
  EXPECT_TRUE(contains(m, "every replica's step must reach the same merge points")) << m;
}

// Custom training loop: strategy.run with optimizer.apply inside, as a TF user writes it, or the
// same step compiled for every replica (jit::ReplicatedFunction: TF's strategy.run inside a
// tf.function). Returns the weights after an epoch and the epoch's summed loss (strategy.reduce).
struct CustomLoopRun {
  std::vector<Tensor> weights;
  double loss = 0.0;
};

CustomLoopRun custom_loop(const Strategy& strategy, bool jit) {
  clear_session();
  random::set_global_seed(5);
  auto scope = strategy.scope();
  Mlp model;
  model.build(Shape{1, 12});
  optimizers::Adam adam({.learning_rate = 1e-2});
  adam.build(model.trainable_weights());
  losses::SparseCategoricalCrossentropy loss_fn({.from_logits = true, .reduction = losses::Reduction::sum});
  const OverrideData data = override_data(64, 40);
  const int replicas = strategy.num_replicas_in_sync();
  const std::int64_t global_batch = 16, shard = global_batch / replicas;
  const auto step = [&](const Tensor& x, const Tensor& y) {
    GradientTape tape;
    // The per-example losses summed over the shard, over the global batch: tf.nn.compute_average_loss.
    const Tensor loss = loss_fn(y, model(x, true)) / static_cast<double>(global_batch);
    std::vector<Tensor> sources;
    for (const Variable& v : model.trainable_weights()) sources.push_back(v.value());
    adam.apply(tape.gradient(loss, sources), model.trainable_weights());
    return loss;
  };
  std::vector<Variable> state = model.trainable_weights();
  for (const Variable& v : adam.variables()) state.push_back(v);
  jit::ReplicatedFunction compiled(
      state,
      [&](const jit::Args& shard_args) { return std::vector<Tensor>{step(shard_args.at("x"), shard_args.at("y"))}; },
      "custom_step", strategy);
  CustomLoopRun run;
  for (std::int64_t begin = 0; begin < 64; begin += global_batch) {
    const auto shard_of = [&](int replica) {
      const std::int64_t first = begin + replica * shard;
      return jit::Args{{"x", ops::slice_rows(data.x, first, first + shard)},
                       {"y", ops::slice_rows(data.y, first, first + shard)}};
    };
    PerReplica<Tensor> losses;
    if (jit) {
      std::vector<jit::Args> shards;
      for (int r = 0; r < replicas; ++r) shards.push_back(shard_of(r));
      for (const std::vector<Tensor>& outputs : compiled(shards)) losses.values.push_back(outputs.at(0));
    } else {
      losses = strategy.run([&](int replica) {
        const jit::Args args = shard_of(replica);
        return step(args.at("x"), args.at("y"));
      });
    }
    run.loss += strategy.reduce(ReduceOp::SUM, losses).item();
  }
  run.weights = model.get_weights();
  return run;
}

TEST(ReplicaStepOverrides, ACustomLoopWithStrategyRunTrainsAlikeOnOneAndEightReplicasEagerAndCompiled) {
  MirroredStrategy one({.num_replicas = 1});
  TPUStrategy eight(TPUClusterResolver::local());
  const CustomLoopRun reference = custom_loop(one, /*jit=*/false);
  for (const auto& [strategy, jit] : {std::pair<const Strategy*, bool>{&eight, false}, {&one, true}, {&eight, true}}) {
    const std::string where =
        "strategy.run on " + std::to_string(strategy->num_replicas_in_sync()) + " replicas, " + mode(jit);
    const CustomLoopRun run = custom_loop(*strategy, jit);
    expect_close(run.weights, reference.weights, where);
    EXPECT_NEAR(run.loss, reference.loss, 1e-5) << where;
  }
}

}  // namespace
}  // namespace kestrel::distribute
