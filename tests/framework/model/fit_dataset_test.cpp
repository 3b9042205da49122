// fit / evaluate / predict on a data::Dataset: the same training as on arrays.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/dataset.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

class FitDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_session();
    random::set_global_seed(3);
    x_ = random::uniform({96, 2}, random::Key(4), -1.0, 1.0);
    y_ = ops::add(ops::multiply(x_, ops::scalar_like(x_, 2.0)), ops::scalar_like(x_, -1.0));
    y_ = ops::sum(y_, {.axes = {1}, .keepdims = true});
  }
  static void compile(Sequential& model) {
    model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  }
  Tensor x_, y_;
};

TEST_F(FitDatasetTest, TrainsLikeTheSameBatchesFromArrays) {
  Sequential from_arrays({layers::Dense(1)});
  compile(from_arrays);
  from_arrays.build({1, 2});
  std::vector<Tensor> initial = from_arrays.get_weights();
  History a = from_arrays.fit(x_, y_, {.batch_size = 16, .epochs = 3, .verbose = 0, .shuffle = false});

  Sequential from_dataset({layers::Dense(1)});
  compile(from_dataset);
  from_dataset.build({1, 2});
  from_dataset.set_weights(initial);
  data::Dataset ds = data::Dataset::from_tensor_slices({{"x", x_}, {"labels", y_}}).batch(16);
  History b = from_dataset.fit(ds, {.epochs = 3, .verbose = 0});

  ASSERT_EQ(a.history.at("loss").size(), 3u);
  for (int e = 0; e < 3; ++e) EXPECT_DOUBLE_EQ(a.history.at("loss")[e], b.history.at("loss")[e]);
  EXPECT_DOUBLE_EQ(from_arrays.evaluate(x_, y_, {.batch_size = 16, .verbose = 0}).at("loss"),
                   from_dataset.evaluate(ds, {.verbose = 0}).at("loss"));
  Tensor p = from_dataset.predict(ds);
  EXPECT_EQ(p.shape(), Shape({96, 1}));
}

TEST_F(FitDatasetTest, ValidationDataCanBeADataset) {
  Sequential model({layers::Dense(1)});
  compile(model);
  data::Dataset train = data::Dataset::from_tensor_slices({{"x", x_}, {"y", y_}}).take(64).batch(16);
  data::Dataset val = data::Dataset::from_tensor_slices({{"x", x_}, {"y", y_}}).skip(64).batch(16);
  History h = model.fit(train, {.epochs = 2, .verbose = 0, .validation_data = val});
  EXPECT_EQ(h.history.at("val_loss").size(), 2u);
}

TEST_F(FitDatasetTest, NamedInputsAndSampleWeightsComeFromKeys) {
  class TwoInputs : public Model {
   public:
    TwoInputs() : dense_(add<layers::Dense>(1)) {}
    Tensor call(const Inputs& x, bool) override { return dense_(ops::concat({x["a"], x["b"]}, 1)); }

   private:
    layers::Dense& dense_;
  };
  TwoInputs model;
  model.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor a = ops::slice(x_, {0, 0}, {-1, 1});
  Tensor b = ops::slice(x_, {0, 1}, {-1, 1});
  Tensor zero_weights = Tensor::zeros({96});
  data::Dataset ds =
      data::Dataset::from_tensor_slices({{"a", a}, {"b", b}, {"labels", y_}, {"sample_weight", zero_weights}})
          .batch(32);
  History h = model.fit(ds, {.epochs = 1, .verbose = 0});
  EXPECT_EQ(h.history.at("loss")[0], 0.0);  // every sample weighs 0
}

TEST_F(FitDatasetTest, AnInfiniteDatasetNeedsStepsPerEpochAndReadsOnAcrossEpochs) {
  Sequential model({layers::Dense(1)});
  compile(model);
  data::Dataset forever = data::Dataset::from_tensor_slices({{"x", x_}, {"labels", y_}}).batch(16).repeat();
  std::string message = error_message<ValueError>([&] { model.fit(forever, {.epochs = 1, .verbose = 0}); });
  EXPECT_TRUE(contains(message, "repeats forever")) << message;
  EXPECT_TRUE(contains(message, "steps_per_epoch")) << message;

  int batches = 0;
  data::Dataset counted = forever.map([&batches](data::Element e) {
    ++batches;
    return e;
  });
  model.fit(counted, {.epochs = 3, .verbose = 0, .steps_per_epoch = 4});
  EXPECT_EQ(batches, 12);
}

TEST_F(FitDatasetTest, StepsPerEpochReadsOnAcrossEpochsAndStopsWhenDataRunsOut) {
  Sequential model({layers::Dense(1)});
  compile(model);
  std::vector<std::int64_t> firsts;  // the first sample index of each batch trained on
  data::Dataset ds = data::Dataset::range(96)
                         .map([this](data::Element e) {
                           const std::int64_t i = e.tensor("value").to_vector<std::int64_t>()[0];
                           return data::Element{{"x", ops::slice(x_, {i, 0}, {1, -1})},
                                                {"labels", ops::slice(y_, {i, 0}, {1, -1})},
                                                {"value", e.tensor("value")}};
                         })
                         .batch(16);
  data::Dataset watched = ds.map([&firsts](data::Element e) {
    firsts.push_back(e.tensor("value").to_vector<std::int64_t>()[0]);
    e.erase("value");
    e.set("x", ops::reshape(e.tensor("x"), {-1, 2}));
    e.set("labels", ops::reshape(e.tensor("labels"), {-1, 1}));
    return e;
  });
  // 6 batches of 16; 2 steps per epoch read on: epoch 2 starts where epoch 1 stopped.
  History h = model.fit(watched, {.epochs = 4, .verbose = 0, .steps_per_epoch = 2});
  EXPECT_EQ(firsts, (std::vector<std::int64_t>{0, 16, 32, 48, 64, 80}));
  EXPECT_EQ(h.epoch.size(), 3u);  // the 4th epoch found no data left: training stopped
  EXPECT_TRUE(model.stop_training);
}

TEST_F(FitDatasetTest, InfiniteValidationDataNeedsValidationSteps) {
  Sequential model({layers::Dense(1)});
  compile(model);
  data::Dataset train = data::Dataset::from_tensor_slices({{"x", x_}, {"labels", y_}}).batch(32);
  data::Dataset val = train.repeat();
  std::string message = error_message<ValueError>([&] { model.fit(train, {.verbose = 0, .validation_data = val}); });
  EXPECT_TRUE(contains(message, "validation_steps")) << message;
  History h = model.fit(train, {.epochs = 2, .verbose = 0, .validation_data = val, .validation_steps = 2});
  EXPECT_EQ(h.history.at("val_loss").size(), 2u);
}

TEST_F(FitDatasetTest, ArrayOnlyOptionsAndStringsAreRejectedWithTheFix) {
  Sequential model({layers::Dense(1)});
  compile(model);
  data::Dataset ds = data::Dataset::from_tensor_slices({{"x", x_}, {"labels", y_}}).batch(16);
  std::string split = error_message<ValueError>([&] { model.fit(ds, {.verbose = 0, .validation_split = 0.2}); });
  EXPECT_TRUE(contains(split, "validation_split applies to arrays")) << split;

  data::Dataset text =
      data::Dataset::from_tensor_slices({{"text", data::Strings({"a", "b"})}, {"labels", Tensor::zeros({2, 1})}})
          .batch(2);
  std::string strings = error_message<TypeError>([&] { model.fit(text, {.verbose = 0}); });
  EXPECT_TRUE(contains(strings, "tokenize the text")) << strings;
}

}  // namespace
}  // namespace kestrel
