#include "framework/model/sequential.h"

#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// Appends its tag to a log, and records the training flag it was called with.
class Tagger : public Layer {
 public:
  Tagger(std::vector<std::string>* log, std::string tag) : Layer("Tagger"), log_(log), tag_(std::move(tag)) {}
  Tensor call(const Tensor& x, bool training) override {
    log_->push_back(tag_ + (training ? ":train" : ":infer"));
    return ops::add(x, ops::scalar_like(x, 1.0));
  }

 private:
  std::vector<std::string>* log_;
  std::string tag_;
};

TEST(Sequential, RunsLayersInOrderAndPassesTraining) {
  std::vector<std::string> log;
  Sequential model;
  model.add<Tagger>(&log, "a");
  model.add<Tagger>(&log, "b");
  model.add<Tagger>(&log, "c");
  Tensor y = model(Tensor::zeros({2, 3}));
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(6, 3.0f));
  EXPECT_EQ(log, (std::vector<std::string>{"a:infer", "b:infer", "c:infer"}));
  log.clear();
  model(Tensor::zeros({2, 3}), /*training=*/true);
  EXPECT_EQ(log, (std::vector<std::string>{"a:train", "b:train", "c:train"}));
}

TEST(Sequential, TakesLayersByValue) {
  clear_session();
  Sequential model({layers::Dense(8, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(4)});
  layers::Dense& head = model.add(layers::Dense(2, {.name = "head"}));
  EXPECT_EQ(model.name(), "sequential");
  EXPECT_EQ(model.class_name(), "Sequential");
  ASSERT_EQ(model.layers().size(), 4u);
  EXPECT_EQ(model.layers()[0]->name(), "dense");
  EXPECT_EQ(model.layers()[1]->name(), "dropout");
  EXPECT_EQ(model.layers()[2]->name(), "dense_1");
  EXPECT_EQ(&head, model.layers()[3]);
  EXPECT_EQ(model(Tensor::ones({3, 5})).shape(), Shape({3, 2}));
  std::vector<std::string> names;
  for (const Variable& v : model.weights()) names.push_back(v.name());
  EXPECT_EQ(names, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias",
                                             "head/kernel", "head/bias"}));
}

TEST(Sequential, MovedLayersKeepTheirChildren) {
  clear_session();
  Sequential model;
  auto& block = model.add(layers::TransformerEncoder({.intermediate_dim = 16, .num_heads = 2}));
  auto& mha = model.add(layers::MultiHeadAttention(2, 4));
  ASSERT_EQ(mha.layers().size(), 5u);  // query, key, value, dropout, attention_output
  for (const Layer* child : mha.layers()) EXPECT_EQ(child->parent(), &mha);
  EXPECT_EQ(&mha.query_dense(), mha.layers()[0]);
  EXPECT_EQ(block.parent(), &model);
  Tensor x = Tensor::ones({1, 3, 8});
  EXPECT_EQ(mha(block(x), x).shape(), Shape({1, 3, 8}));
  EXPECT_EQ(mha.query_dense().kernel().name(), "multi_head_attention/query/kernel");
}

TEST(Sequential, BenchMlpAndCnnParameterCounts) {
  Sequential mlp(
      {layers::Dense(512, {.activation = "relu"}), layers::Dense(256, {.activation = "relu"}), layers::Dense(10)});
  mlp.build({1, 784});
  EXPECT_EQ(mlp.count_params(), 535818);

  Sequential cnn;
  cnn.add<layers::Conv2D>(32, std::array{3, 3}, layers::Conv2DOptions{.activation = "relu"});
  cnn.add<layers::MaxPooling2D>();
  cnn.add<layers::Conv2D>(64, std::array{3, 3}, layers::Conv2DOptions{.activation = "relu"});
  cnn.add<layers::MaxPooling2D>();
  cnn.add<layers::Flatten>();
  cnn.add<layers::Dense>(128, layers::DenseOptions{.activation = "relu"});
  cnn.add<layers::Dense>(10);
  cnn.build({1, 28, 28, 1});
  EXPECT_EQ(cnn.count_params(), 225034);
}

TEST(Sequential, FitsASmallClassificationProblem) {
  // The weights and dropout draw from a stream of this test's own, so what ran before it in the
  // executable does not matter; and 30 epochs fit the blobs from any initialization (5 left some
  // seeds near chance).
  testing::GlobalRandomStreamGuard guard;
  random::set_global_seed(7);
  // Two Gaussian blobs, labels 0 and 1.
  Tensor labels = ops::cast(random::uniform({256}, random::Key(1)) * 2.0, DType::int32);
  Tensor centers = ops::cast(ops::reshape(labels, {256, 1}), DType::float32) * 4.0 - 2.0;
  Tensor x = random::normal({256, 4}, random::Key(2)) + centers;
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dropout(0.1), layers::Dense(2)});
  model.compile({.optimizer = "adam",
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  History h = model.fit(x, labels, {.batch_size = 32, .epochs = 30, .verbose = 0});
  const std::vector<double>& loss = h.history.at("loss");
  EXPECT_LT(loss.back(), loss.front());
  EXPECT_GT(model.evaluate(x, labels, {.verbose = 0}).at("accuracy"), 0.9);
}

TEST(Sequential, EmptyModelExplainsTheFix) {
  Sequential model;
  std::string m = error_message<ValueError>([&] { model(Tensor::ones({1, 2})); });
  EXPECT_TRUE(contains(m, "has no layers")) << m;
}

TEST(Sequential, LayersWithTheirOwnSignatureExplainThemselves) {
  Sequential model;
  model.add<layers::MultiHeadAttention>(2, 4);
  EXPECT_THROW(model(Tensor::ones({1, 3, 8})), ValueError);
}

}  // namespace
}  // namespace kestrel
