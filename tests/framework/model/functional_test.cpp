// The Functional API: Input(), layers called on Keras tensors, and Model(inputs, outputs).
#include <gtest/gtest.h>

#include <sstream>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/functional_graph.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/model/copy_weights.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::copy_weights;
using testing::error_message;

// A layer that takes a list: the sum of its inputs (a merging layer of the test's own).
class SumOfInputs : public Layer {
 public:
  SumOfInputs() : Layer("SumOfInputs") {}
  Tensor call_list(const std::vector<Tensor>& xs, bool /*training*/) override {
    Tensor total = xs.front();
    for (std::size_t i = 1; i < xs.size(); ++i) total = ops::add(total, xs[i]);
    return total;
  }
};

// A layer whose class is not registered, so a temporary of it cannot be kept.
class Unregistered : public Layer {
 public:
  Unregistered() : Layer("Unregistered") {}
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
};

// The classifier below, as a subclass.
class Classifier : public Model {
 public:
  Classifier()
      : hidden_(add<layers::Dense>(16, layers::DenseOptions{.activation = "relu"})), out_(add<layers::Dense>(3)) {}
  Tensor call(const Inputs& x, bool training) override { return out_(hidden_(x, training), training); }

 private:
  layers::Dense& hidden_;
  layers::Dense& out_;
};

KESTREL_REGISTER_SERIALIZABLE("kestrel_tests", SumOfInputs);

Tensor batch(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  return random::normal({rows, cols}, random::Key(seed));
}

TEST(Input, IsAKerasTensorWithTheBatchDimFirst) {
  clear_session();
  const Tensor x = Input({28, 28, 1});
  EXPECT_TRUE(functional::is_keras_tensor(x));
  EXPECT_EQ(x.shape(), Shape({1, 28, 28, 1}));
  EXPECT_EQ(x.dtype(), DType::float32);
  const Layer& layer = *functional::history(x)->layer;
  EXPECT_EQ(layer.class_name(), "InputLayer");
  EXPECT_EQ(layer.name(), "input_layer");

  const Tensor ids = Input({128}, {.name = "input_ids", .dtype = DType::int32, .batch_size = 8});
  EXPECT_EQ(ids.shape(), Shape({8, 128}));
  EXPECT_EQ(ids.dtype(), DType::int32);
  EXPECT_EQ(functional::history(ids)->layer->name(), "input_ids");
  EXPECT_FALSE(functional::is_keras_tensor(Tensor::ones({2, 2})));
}

TEST(Input, RejectsAShapeWithAnEmptyDim) {
  const std::string m = error_message<ShapeError>([] { Input({0, 3}, {.name = "bad"}); });
  EXPECT_TRUE(contains(m, "layer 'bad' (InputLayer)")) << m;
  EXPECT_TRUE(contains(m, "the batch dim is not part of it")) << m;
}

TEST(KerasTensor, LayersCalledOnOneRecordTheCallAndInferTheOutput) {
  clear_session();
  const Tensor x = Input({784});
  layers::Dense dense(64, {.activation = "relu"});
  const Tensor h = dense(x);
  EXPECT_TRUE(functional::is_keras_tensor(h));
  EXPECT_EQ(h.shape(), Shape({1, 64}));
  EXPECT_TRUE(dense.built());  // built from the Keras tensor's shape
  EXPECT_EQ(dense.kernel().shape(), Shape({784, 64}));
  const functional::Node& node = *functional::history(h);
  EXPECT_EQ(node.layer, &dense);
  EXPECT_EQ(node.kept, nullptr);  // the variable keeps it
  ASSERT_EQ(node.inputs.size(), 1U);
  EXPECT_TRUE(node.inputs.front().is_same(x));

  // A temporary is moved into the record, which keeps it alive.
  const Tensor y = layers::Dense(10)(h);
  EXPECT_EQ(y.shape(), Shape({1, 10}));
  EXPECT_NE(functional::history(y)->kept, nullptr);
  EXPECT_EQ(functional::history(y)->layer->name(), "dense_1");
}

TEST(KerasTensor, OpsOutsideALayerAndMixedInputsAreErrors) {
  clear_session();
  const Tensor x = Input({4});
  std::string m = error_message<ValueError>([&] { ops::relu(x); });
  EXPECT_TRUE(contains(m, "[relu]")) << m;
  EXPECT_TRUE(contains(m, "Keras tensor")) << m;
  EXPECT_TRUE(contains(m, "Layer subclass")) << m;

  SumOfInputs sum;
  m = error_message<ValueError>([&] { sum(std::vector<Tensor>{x, Tensor::ones({1, 4})}); });
  EXPECT_TRUE(contains(m, "sum_of_inputs")) << m;
  EXPECT_TRUE(contains(m, "mixed with tensors holding data")) << m;

  m = error_message<ValueError>([&] { Unregistered()(x); });
  EXPECT_TRUE(contains(m, "(Unregistered)")) << m;
  EXPECT_TRUE(contains(m, "KESTREL_REGISTER_SERIALIZABLE")) << m;
  Unregistered kept;
  EXPECT_EQ(kept(x).shape(), Shape({1, 4}));  // a named one is fine: its owner keeps it
}

TEST(Functional, EqualsSequentialAndSubclassedWithTheSameWeights) {
  clear_session();
  random::set_global_seed(7);
  const Tensor inputs = Input({8});
  const Tensor hidden = layers::Dense(16, {.activation = "relu"})(inputs);
  Model functional(inputs, layers::Dense(3)(hidden));
  EXPECT_EQ(functional.class_name(), "Functional");
  EXPECT_EQ(functional.name(), "functional");
  EXPECT_TRUE(functional.built());

  Sequential sequential({layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  sequential.build({1, 8});
  Classifier subclassed;
  subclassed.build({1, 8});
  copy_weights(functional, sequential);
  copy_weights(functional, subclassed);

  const Tensor x = batch(5, 8, 1);
  const std::vector<float> expected = functional(x).to_vector<float>();
  EXPECT_EQ(functional(x).shape(), Shape({5, 3}));
  EXPECT_EQ(sequential(x).to_vector<float>(), expected);
  EXPECT_EQ(subclassed(x).to_vector<float>(), expected);

  // Weights are named as in Keras 3: by layer, without the model's name.
  const std::vector<Variable> weights = functional.weights();
  ASSERT_EQ(weights.size(), 4U);
  EXPECT_EQ(weights[0].name(), "dense/kernel");
  EXPECT_EQ(weights[3].name(), "dense_1/bias");
  ASSERT_EQ(functional.layers().size(), 3U);
  EXPECT_EQ(functional.layers()[0]->class_name(), "InputLayer");
}

TEST(Functional, ASharedLayerIsOneSetOfWeightsCalledTwice) {
  clear_session();
  const Tensor a = Input({6}, {.name = "a"});
  const Tensor b = Input({6}, {.name = "b"});
  layers::Dense shared(4);
  SumOfInputs sum;
  Model model({a, b}, sum(std::vector<Tensor>{shared(a), shared(b)}));
  EXPECT_EQ(model.weights().size(), 2U);
  EXPECT_EQ(model.layers().size(), 4U);  // a, b, the shared Dense, the sum

  const Tensor xa = batch(3, 6, 2);
  const Tensor xb = batch(3, 6, 3);
  const Tensor y = model(Inputs{{"a", xa}, {"b", xb}});
  const Tensor expected = ops::add(shared(xa), shared(xb));
  EXPECT_EQ(y.to_vector<float>(), expected.to_vector<float>());

  const std::vector<std::string> connected = model.functional_graph()->connected_to(shared);
  EXPECT_EQ(connected, (std::vector<std::string>{"a[0][0]", "b[0][0]"}));
  EXPECT_EQ(model.functional_graph()->connected_to(sum), (std::vector<std::string>{"dense[0][0]", "dense[1][0]"}));
}

TEST(Functional, NamedInputsTakeTheirDataByKey) {
  clear_session();
  const Tensor ids = Input({5}, {.name = "ids"});
  const Tensor extra = Input({5}, {.name = "extra"});
  layers::Dense project(2);
  Model model(Inputs{{"features", ids}, {"bias", extra}}, project(SumOfInputs()(std::vector<Tensor>{ids, extra})));
  const Tensor x = batch(2, 5, 4);
  const Tensor z = batch(2, 5, 5);
  EXPECT_EQ(model(Inputs{{"features", x}, {"bias", z}}).to_vector<float>(), project(ops::add(x, z)).to_vector<float>());
  const std::string m = error_message<ValueError>([&] { model(x); });
  EXPECT_TRUE(contains(m, "takes 2 named inputs")) << m;
}

TEST(Functional, AModelIsALayerOfAnother) {
  clear_session();
  const Tensor x = Input({4});
  Model encoder(x, layers::Dense(2)(x), "encoder");
  const Tensor outer_input = Input({4});
  Model outer(outer_input, layers::Dense(1)(encoder(outer_input)));
  EXPECT_EQ(outer.layers().size(), 3U);
  EXPECT_EQ(outer.layers()[1], &encoder);
  EXPECT_EQ(outer.weights().size(), 4U);
  const Tensor data = batch(3, 4, 6);
  const Tensor encoded = encoder(data);
  EXPECT_EQ(outer(data).to_vector<float>(), outer.layers()[2]->operator()(encoded).to_vector<float>());
}

TEST(Functional, ADisconnectedOrUnusedInputIsAnErrorNamingIt) {
  clear_session();
  const Tensor a = Input({3}, {.name = "a"});
  const Tensor b = Input({3}, {.name = "b"});
  SumOfInputs sum;
  const Tensor both = sum(std::vector<Tensor>{a, b});
  std::string m = error_message<ValueError>([&] { Model model(a, both); });
  EXPECT_TRUE(contains(m, "input 'b'")) << m;
  EXPECT_TRUE(contains(m, "disconnected")) << m;

  m = error_message<ValueError>([&] { Model model({a, b}, layers::Dense(2)(a)); });
  EXPECT_TRUE(contains(m, "input 'b' (InputLayer) does not reach the output")) << m;

  m = error_message<ValueError>([&] { Model model(both, layers::Dense(2)(both)); });
  EXPECT_TRUE(contains(m, "must be Input() tensors")) << m;

  m = error_message<ValueError>([&] { Model model(Tensor::ones({2, 3}), both); });
  EXPECT_TRUE(contains(m, "expected a Keras tensor")) << m;
}

TEST(Functional, RejectsDataOfTheWrongShape) {
  clear_session();
  const Tensor x = Input({4}, {.name = "pixels"});
  Model model(x, layers::Dense(2)(x));
  const std::string m = error_message<ShapeError>([&] { model(Tensor::ones({3, 5})); });
  EXPECT_TRUE(contains(m, "input 'pixels' expects shape (None, 4)")) << m;
}

TEST(Functional, SummaryShowsConnectedToUnlessTheModelIsAChain) {
  clear_session();
  const Tensor a = Input({6}, {.name = "a"});
  const Tensor b = Input({6}, {.name = "b"});
  layers::Dense shared(4);
  SumOfInputs sum;
  Model branched({a, b}, sum(std::vector<Tensor>{shared(a), shared(b)}));
  std::ostringstream text;
  branched.summary(text);
  EXPECT_TRUE(contains(text.str(), "Connected to")) << text.str();
  EXPECT_TRUE(contains(text.str(), "a[0][0]")) << text.str();
  EXPECT_TRUE(contains(text.str(), "dense[1][0]")) << text.str();
  EXPECT_TRUE(contains(text.str(), "(None, 4)")) << text.str();
  EXPECT_TRUE(contains(text.str(), "Total params: 28")) << text.str();

  const Tensor x = Input({6});
  Model chain(x, layers::Dense(2)(x));
  std::ostringstream plain;
  chain.summary(plain);
  EXPECT_FALSE(contains(plain.str(), "Connected to")) << plain.str();
  EXPECT_TRUE(contains(plain.str(), "input_layer (InputLayer)")) << plain.str();
}

// A Functional model trains as any other, eagerly and compiled, and both give the same losses.
TEST(Functional, FitsEagerlyAndCompiled) {
  std::vector<double> final_loss;
  for (const bool jit : {false, true}) {
    clear_session();
    random::set_global_seed(11);
    const Tensor inputs = Input({8});
    Model model(inputs, layers::Dense(3)(layers::Dense(16, {.activation = "relu"})(inputs)));
    model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                   .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .jit_compile = jit});
    const Tensor x = batch(64, 8, 21);
    const Tensor y = ops::cast(ops::argmax(ops::slice(x, {0, 0}, {64, 3}), -1), DType::int32);
    const History history = model.fit(x, y, {.batch_size = 16, .epochs = 5, .verbose = 0});
    const std::vector<double>& losses = history.history.at("loss");
    EXPECT_LT(losses.back(), losses.front() * 0.8) << (jit ? "compiled" : "eager");
    final_loss.push_back(losses.back());
  }
  EXPECT_NEAR(final_loss[0], final_loss[1], 1e-4 * std::abs(final_loss[0]));
}

}  // namespace
}  // namespace kestrel
