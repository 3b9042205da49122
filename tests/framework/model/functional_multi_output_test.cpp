// Functional models of several outputs: outputs named by their layers or by keys, a loss, weight
// and metrics per output, targets by output name from arrays and datasets, and predict's
// outputs by name — eagerly and compiled alike.
#include <gtest/gtest.h>

#include <cmath>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/dataset.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// A trunk shared by two heads: "digit" classifies into 3 classes, "size" regresses one value.
// `named`: outputs given as {{"class", ...}, {"value", ...}} instead of a list.
std::unique_ptr<Model> two_headed(bool named = false) {
  const Tensor x = Input({6}, {.name = "features"});
  const Tensor h = layers::Dense(16, {.activation = "relu"})(x);
  const Tensor digit = layers::Dense(3, {.name = "digit"})(h);
  const Tensor size = layers::Dense(1, {.name = "size"})(h);
  if (named) return std::make_unique<Model>(x, Outputs{{"class", digit}, {"value", size}}, "two_headed");
  return std::make_unique<Model>(x, std::vector<Tensor>{digit, size}, "two_headed");
}

// The same two heads as a subclass: it overrides call_outputs and output_names instead of call.
class TwoHeads : public Model {
 public:
  TwoHeads()
      : trunk_(add<layers::Dense>(16, layers::DenseOptions{.activation = "relu"})),
        digit_(add<layers::Dense>(3)),
        size_(add<layers::Dense>(1)) {}
  Outputs call_outputs(const Inputs& x, bool training) override {
    const Tensor h = trunk_(x, training);
    return {{"digit", digit_(h, training)}, {"size", size_(h, training)}};
  }
  std::vector<std::string> output_names() const override { return {"digit", "size"}; }

 private:
  layers::Dense& trunk_;
  layers::Dense& digit_;
  layers::Dense& size_;
};

struct Data {
  Tensor x;
  Outputs y;
};

Data data_of(std::int64_t n, std::uint64_t seed) {
  const Tensor x = random::normal({n, 6}, random::Key(seed));
  const Tensor digit = random::randint({n}, random::Key(seed + 1), 0, 3);
  const Tensor size = random::normal({n, 1}, random::Key(seed + 2));
  return {x, Outputs{{"digit", digit}, {"size", size}}};
}

CompileOptions two_losses(bool jit) {
  return {.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
          .loss = {{"digit", losses::SparseCategoricalCrossentropy({.from_logits = true})}, {"size", "mse"}},
          .loss_weights = {{"size", 0.5}},
          .metrics = {{"digit", {"accuracy"}}, {"size", {"mae"}}},
          .jit_compile = jit};
}

struct Trained {
  History history;
  Logs evaluated;
  Outputs predicted;
  std::vector<Tensor> weights;
};

// Two epochs of 50 samples at batch 16 (a last batch of 2), then evaluate and predict on 20.
Trained train(bool jit) {
  clear_session();
  random::set_global_seed(11);
  std::unique_ptr<Model> model = two_headed();
  model->compile(two_losses(jit));
  const Data data = data_of(50, 1), test = data_of(20, 7);
  Trained run;
  run.history = model->fit(data.x, data.y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  run.evaluated = model->evaluate(test.x, test.y, {.batch_size = 16, .verbose = 0});
  run.predicted = model->predict(test.x, {.batch_size = 16});
  run.weights = model->get_weights();
  return run;
}

double max_abs_difference(const Tensor& a, const Tensor& b) { return ops::max(ops::abs(ops::subtract(a, b))).item(); }

TEST(FunctionalMultiOutput, OutputsAreNamedByTheirLayersOrByTheirKeys) {
  clear_session();
  const std::unique_ptr<Model> listed = two_headed();
  EXPECT_EQ(listed->output_names(), (std::vector<std::string>{"digit", "size"}));
  const Outputs out = listed->outputs_of(random::normal({4, 6}, random::Key(3)));
  ASSERT_TRUE(out.is_named());
  EXPECT_EQ(out["digit"].shape(), (Shape{4, 3}));
  EXPECT_EQ(out["size"].shape(), (Shape{4, 1}));

  const std::unique_ptr<Model> keyed = two_headed(/*named=*/true);
  EXPECT_EQ(keyed->output_names(), (std::vector<std::string>{"class", "value"}));
  EXPECT_EQ(keyed->outputs_of(random::normal({2, 6}, random::Key(3)))["value"].shape(), (Shape{2, 1}));

  // The one-output call says how to reach every output.
  const std::string m = error_message<ValueError>([&] { (*listed)(random::normal({2, 6}, random::Key(3))); });
  EXPECT_TRUE(contains(m, "'two_headed'") && contains(m, "'digit', 'size'") && contains(m, "outputs_of")) << m;
}

TEST(FunctionalMultiOutput, BracedListsReadAsKerasListsAndDicts) {
  clear_session();
  const Tensor features = Input({4});
  const Tensor trunk = layers::Dense(8, {.activation = "relu"})(features);
  Model two_heads(features, {layers::Dense(3, {.name = "digit"})(trunk), layers::Dense(1, {.name = "size"})(trunk)});
  two_heads.compile({.optimizer = "adam",
                     .loss = {{"digit", losses::SparseCategoricalCrossentropy({.from_logits = true})}, {"size", "mse"}},
                     .loss_weights = {{"size", 0.5}},
                     .metrics = {{"digit", {"accuracy"}}}});
  const Tensor x = random::normal({8, 4}, random::Key(2));
  const History history = two_heads.fit(
      x, {{"digit", random::randint({8}, random::Key(3), 0, 3)}, {"size", Tensor::zeros({8, 1})}}, {.verbose = 0});
  EXPECT_EQ(history.history.count("digit_accuracy"), 1u);
  const Outputs predicted = two_heads.predict(x);
  EXPECT_EQ(predicted["digit"].shape(), (Shape{8, 3}));
}

TEST(FunctionalMultiOutput, LogsEachOutputsLossAndMetricsAndTheirWeightedSum) {
  const Trained run = train(/*jit=*/false);
  for (const char* key : {"loss", "digit_loss", "size_loss", "digit_accuracy", "size_mae"}) {
    ASSERT_EQ(run.history.history.count(key), 1u) << key;
  }
  // The total is each output's loss times its weight, summed; each output's own is logged
  // unweighted, as Keras 3 logs it.
  const double total = run.evaluated.at("loss");
  EXPECT_NEAR(total, run.evaluated.at("digit_loss") + 0.5 * run.evaluated.at("size_loss"), 1e-5);

  // evaluate's per-output figures are the losses and metrics of predict's outputs.
  const Data test = data_of(20, 7);
  const double digit_loss =
      losses::SparseCategoricalCrossentropy({.from_logits = true})(test.y["digit"], run.predicted["digit"]).item();
  const double size_mse = losses::MeanSquaredError()(test.y["size"], run.predicted["size"]).item();
  EXPECT_NEAR(run.evaluated.at("digit_loss"), digit_loss, 1e-5);
  EXPECT_NEAR(run.evaluated.at("size_loss"), size_mse, 1e-5);
  const Tensor hits = ops::equal(ops::argmax(run.predicted["digit"], -1), ops::cast(test.y["digit"], DType::int64));
  EXPECT_NEAR(run.evaluated.at("digit_accuracy"), ops::mean(ops::cast(hits, DType::float32)).item(), 1e-6);
  EXPECT_NEAR(run.evaluated.at("size_mae"),
              ops::mean(ops::abs(ops::subtract(test.y["size"], run.predicted["size"]))).item(), 1e-5);

  // Training moved both heads' losses.
  EXPECT_LT(run.history.history.at("digit_loss").back(), run.history.history.at("digit_loss").front());
  EXPECT_LT(run.history.history.at("size_loss").back(), run.history.history.at("size_loss").front());
}

TEST(FunctionalMultiOutput, CompiledStepTrainsAsTheEagerOne) {
  const Trained eager = train(/*jit=*/false);
  const Trained compiled = train(/*jit=*/true);
  for (const auto& [key, values] : eager.history.history) {
    for (std::size_t e = 0; e < values.size(); ++e) {
      EXPECT_NEAR(compiled.history.history.at(key)[e], values[e], 1e-4) << key << " epoch " << e;
    }
  }
  for (std::size_t i = 0; i < eager.weights.size(); ++i) {
    EXPECT_LT(max_abs_difference(compiled.weights[i], eager.weights[i]), 1e-4) << "weight " << i;
  }
  EXPECT_LT(max_abs_difference(compiled.predicted["digit"], eager.predicted["digit"]), 1e-4);
  EXPECT_EQ(compiled.predicted["size"].shape(), (Shape{20, 1}));  // the padded last batch's rows left out

  // Every run gives the same bits.
  const Trained again = train(/*jit=*/true);
  for (std::size_t i = 0; i < compiled.weights.size(); ++i) {
    EXPECT_EQ(max_abs_difference(again.weights[i], compiled.weights[i]), 0.0) << "weight " << i;
  }
}

TEST(FunctionalMultiOutput, ASubclassOfSeveralOutputsTrainsAsTheFunctionalModel) {
  const Data data = data_of(50, 1);
  auto fit_once = [&](Model& model) {
    model.compile(two_losses(/*jit=*/true));
    model.build({1, 6});
    return model.fit(data.x, data.y, {.batch_size = 16, .epochs = 2, .verbose = 0, .shuffle = false});
  };
  clear_session();
  random::set_global_seed(11);
  std::unique_ptr<Model> functional = two_headed();
  const History want = fit_once(*functional);
  clear_session();
  random::set_global_seed(11);
  TwoHeads subclass;
  const History got = fit_once(subclass);
  for (const char* key : {"loss", "digit_loss", "size_loss", "digit_accuracy", "size_mae"}) {
    EXPECT_NEAR(got.history.at(key).back(), want.history.at(key).back(), 1e-5) << key;
  }
  EXPECT_EQ(subclass.predict(data.x)["size"].shape(), (Shape{50, 1}));
}

TEST(FunctionalMultiOutput, CompiledPredictTracesAgainForAShorterExecutionAndALargerBatch) {
  clear_session();
  random::set_global_seed(11);
  std::unique_ptr<Model> model = two_headed();
  CompileOptions options = two_losses(/*jit=*/true);
  options.steps_per_execution = 2;
  model->compile(options);
  const Tensor x = random::normal({40, 6}, random::Key(4));
  const Outputs want = model->outputs_of(x);
  // Three batches of 16: an execution of two steps, then a shorter one of one (a program of its
  // own, traced when it first runs); then batches of 40, a new signature.
  for (const std::int64_t batch_size : {16, 40}) {
    const Outputs got = model->predict(x, {.batch_size = batch_size});
    for (const char* output : {"digit", "size"}) {
      EXPECT_LT(max_abs_difference(got[output], want[output]), 1e-5) << output << " at batch " << batch_size;
    }
  }
  EXPECT_EQ(model->jit_stats().compiles, 3);
}

TEST(FunctionalMultiOutput, DatasetKeysNamedAfterOutputsAreTheirTargets) {
  const Data data = data_of(48, 1);
  auto fit_once = [&](bool from_dataset) {
    clear_session();
    random::set_global_seed(11);
    std::unique_ptr<Model> model = two_headed();
    model->compile(two_losses(/*jit=*/false));
    if (!from_dataset) {
      return model->fit(data.x, data.y, {.batch_size = 16, .epochs = 1, .verbose = 0, .shuffle = false});
    }
    const data::Dataset dataset =
        data::Dataset::from_tensor_slices({{"features", data.x}, {"digit", data.y["digit"]}, {"size", data.y["size"]}})
            .batch(16);
    return model->fit(dataset, {.epochs = 1, .verbose = 0});
  };
  const History arrays = fit_once(false), dataset = fit_once(true);
  for (const char* key : {"loss", "digit_loss", "size_loss", "digit_accuracy"}) {
    EXPECT_NEAR(dataset.history.at(key)[0], arrays.history.at(key)[0], 1e-6) << key;
  }
}

TEST(FunctionalMultiOutput, OneLossForEveryOutputAndOutputsWithoutALoss) {
  clear_session();
  random::set_global_seed(11);
  std::unique_ptr<Model> model = two_headed();
  const Data data = data_of(32, 1);
  // One loss applies to every output: both regress here.
  const Outputs targets{{"digit", random::normal({32, 3}, random::Key(5))}, {"size", data.y["size"]}};
  model->compile({.optimizer = "sgd", .loss = "mse"});
  const Logs both = model->evaluate(data.x, targets, {.verbose = 0});
  EXPECT_NEAR(both.at("loss"), both.at("digit_loss") + both.at("size_loss"), 1e-5);

  // An output left out of the dict has no loss, and needs no target.
  model->compile({.optimizer = "sgd", .loss = {{"size", "mse"}}});
  const Logs one = model->evaluate(data.x, Outputs{{"size", data.y["size"]}}, {.verbose = 0});
  EXPECT_NEAR(one.at("loss"), both.at("size_loss"), 1e-6);
  EXPECT_EQ(one.count("digit_loss"), 0u);
  EXPECT_EQ(one.count("size_loss"), 0u);  // one loss term: the total is its loss, logged once
}

TEST(FunctionalMultiOutput, BadOptionsAndTargetsNameTheOutputs) {
  clear_session();
  std::unique_ptr<Model> model = two_headed();
  std::string m = error_message<ValueError>([&] { model->compile({.loss = {{"digits", "mse"}}}); });
  EXPECT_TRUE(contains(m, "'digits'") && contains(m, "'digit', 'size'")) << m;
  m = error_message<ValueError>([&] { model->compile({.loss = "mse", .loss_weights = {{"sise", 2.0}}}); });
  EXPECT_TRUE(contains(m, "loss_weights") && contains(m, "'sise'")) << m;
  m = error_message<ValueError>([&] { model->compile({.loss = "mse", .metrics = {"mae"}}); });
  EXPECT_TRUE(contains(m, "2 outputs") && contains(m, "per output")) << m;

  model->compile(two_losses(/*jit=*/false));
  const Data data = data_of(8, 1);
  m = error_message<ValueError>([&] { model->fit(data.x, data.y["size"], {.verbose = 0}); });
  EXPECT_TRUE(contains(m, "one tensor") && contains(m, "named by output")) << m;
  m = error_message<ValueError>([&] { model->fit(data.x, Outputs{{"digit", data.y["digit"]}}, {.verbose = 0}); });
  EXPECT_TRUE(contains(m, "no 'size'") && contains(m, "'digit'")) << m;

  // Two outputs of one name cannot be told apart.
  const Tensor x = Input({2});
  const Tensor y = layers::Dense(1, {.name = "twice"})(x);
  m = error_message<ValueError>([&] { Model both(x, std::vector<Tensor>{y, y}); });
  EXPECT_TRUE(contains(m, "'twice'") && contains(m, "named")) << m;

  // A single-output model takes no per-output options.
  const Tensor z = Input({2});
  Model single(z, layers::Dense(1)(z));
  m = error_message<ValueError>([&] { single.compile({.loss = {{"dense", "mse"}}}); });
  EXPECT_TRUE(contains(m, "one output") && contains(m, "'dense'")) << m;
}

}  // namespace
}  // namespace kestrel
