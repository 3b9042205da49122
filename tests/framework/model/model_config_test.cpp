// get_config / from_config: layers, Sequential and Functional models as Keras 3 writes their
// configs, and made back from them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/keras_tensor.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/layers.h"
#include "framework/layers/serialization.h"
#include "framework/model/sequential.h"
#include "framework/ops/ops.h"
#include "tests/framework/model/copy_weights.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using nlohmann::json;
using testing::contains;
using testing::copy_weights;
using testing::error_message;

// A user's layer with an option, registered so configs can name it.
class Scale : public Layer {
 public:
  explicit Scale(double factor, std::string name = "") : Layer("Scale", std::move(name)), factor_(factor) {}
  Tensor call(const Tensor& x, bool /*training*/) override {
    return ops::multiply(x, Tensor::scalar(static_cast<float>(factor_)));
  }
  json get_config() const override {
    json config = Layer::get_config();
    config["factor"] = factor_;
    return config;
  }
  static Scale from_config(const json& config) { return Scale(config.at("factor").get<double>(), config.at("name")); }

 private:
  double factor_;
};
KESTREL_REGISTER_SERIALIZABLE("kestrel_tests", Scale);

// A user's merging layer: the sum of a list of two tensors.
class PairSum : public Layer {
 public:
  PairSum() : Layer("PairSum") {}
  Tensor call_list(const std::vector<Tensor>& xs, bool /*training*/) override { return ops::add(xs.at(0), xs.at(1)); }
};
KESTREL_REGISTER_SERIALIZABLE("kestrel_tests", PairSum);

TEST(LayerConfig, DenseWritesKerasKeysAndReadsThemBack) {
  clear_session();
  layers::Dense dense(64, {.activation = "relu", .kernel_initializer = initializers::RandomNormal({.stddev = 0.02})});
  dense(Tensor::ones({2, 784}));
  const json object = serialization::serialize_layer(dense);
  EXPECT_EQ(object.at("module"), "keras.layers");
  EXPECT_EQ(object.at("class_name"), "Dense");
  EXPECT_TRUE(object.at("registered_name").is_null());
  EXPECT_EQ(object.at("build_config").at("input_shape"), json::parse("[null, 784]"));
  const json& config = object.at("config");
  EXPECT_EQ(config.at("name"), "dense");
  EXPECT_EQ(config.at("trainable"), true);
  EXPECT_EQ(config.at("dtype"), json::parse(R"({"module": "keras", "class_name": "DTypePolicy",
                                                 "config": {"name": "float32"}, "registered_name": null})"));
  EXPECT_EQ(config.at("units"), 64);
  EXPECT_EQ(config.at("activation"), "relu");
  EXPECT_EQ(config.at("use_bias"), true);
  EXPECT_EQ(config.at("kernel_initializer"),
            json::parse(R"({"module": "keras.initializers", "class_name": "RandomNormal",
                            "config": {"mean": 0.0, "stddev": 0.02, "seed": null}, "registered_name": null})"));
  EXPECT_EQ(config.at("bias_initializer").at("class_name"), "Zeros");
  EXPECT_TRUE(config.at("kernel_regularizer").is_null());

  const std::unique_ptr<Layer> copy = serialization::deserialize_layer(object);
  EXPECT_TRUE(copy->built());
  EXPECT_EQ(copy->weights().front().shape(), Shape({784, 64}));
  EXPECT_EQ(serialization::serialize_layer(*copy), object);
}

TEST(LayerConfig, ARegisteredUserLayerCarriesItsRegisteredName) {
  clear_session();
  Scale scale(2.5);
  const json object = serialization::serialize_layer(scale);
  EXPECT_EQ(object.at("registered_name"), "kestrel_tests>Scale");
  EXPECT_EQ(object.at("config").at("factor"), 2.5);
  const std::unique_ptr<Layer> copy = serialization::deserialize_layer(object);
  EXPECT_EQ((*copy)(Tensor::ones({1, 2})).to_vector<float>(), (std::vector<float>{2.5f, 2.5f}));
}

TEST(LayerConfig, AnUnknownClassIsAnErrorNamingItAndTheRegistry) {
  const json object = json::parse(R"({"module": "my_package", "class_name": "Mystery", "config": {},
                                      "registered_name": "my_package>Mystery"})");
  const std::string m = error_message<ValueError>([&] { serialization::deserialize_layer(object); });
  EXPECT_TRUE(contains(m, "'Mystery'")) << m;
  EXPECT_TRUE(contains(m, "KESTREL_REGISTER_SERIALIZABLE(\"package\", Mystery)")) << m;
  const json bad_units =
      json::parse(R"({"module": "keras.layers", "class_name": "Dense", "config": {"units": "ten"}})");
  const std::string units = error_message<ValueError>([&] { serialization::deserialize_layer(bad_units); });
  EXPECT_TRUE(contains(units, "'units'")) << units;
}

TEST(ModelConfig, SequentialStartsWithItsInputLayerAndRebuildsTheSameModel) {
  clear_session();
  Sequential model({layers::Dense(16, {.activation = "relu"}), layers::Dense(8), layers::Dense(3)});
  model.build({1, 8});
  const json config = model.get_config();
  EXPECT_EQ(config.at("name"), "sequential");
  ASSERT_EQ(config.at("layers").size(), 4U);
  EXPECT_EQ(config.at("layers")[0].at("class_name"), "InputLayer");
  EXPECT_EQ(config.at("layers")[0].at("config").at("batch_shape"), json::parse("[null, 8]"));
  EXPECT_EQ(config.at("layers")[2].at("config").at("name"), "dense_1");
  EXPECT_EQ(config.at("build_input_shape"), json::parse("[null, 8]"));

  const std::unique_ptr<Sequential> copy = Sequential::from_config(config);
  EXPECT_TRUE(copy->built());
  EXPECT_EQ(copy->get_config(), config);
  copy_weights(model, *copy);
  const Tensor x = random::normal({4, 8}, random::Key(1));
  EXPECT_EQ((*copy)(x).to_vector<float>(), model(x).to_vector<float>());
}

TEST(ModelConfig, FunctionalWritesEachCallAndRebuildsSharedLayersAndNamedInputs) {
  clear_session();
  const Tensor a = Input({6}, {.name = "a"});
  const Tensor b = Input({6}, {.name = "b"});
  layers::Dense shared(4, {.activation = "tanh"});
  Scale scale(0.5);
  scale(shared(a));  // a call outside the model: its config leaves it out
  PairSum sum;
  const Tensor joined = sum(std::vector<Tensor>{layers::Dense(4, {.name = "project"})(a), scale(shared(b))});
  Model model(Inputs{{"left", a}, {"right", b}}, layers::Dense(2)(joined));
  const json config = model.get_config();
  EXPECT_EQ(config.at("input_layers"), json::parse(R"({"left": ["a", 0, 0], "right": ["b", 0, 0]})"));
  EXPECT_EQ(config.at("layers").size(), 7U);  // a, b, project, dense, scale, pair_sum, dense_1
  const json& pair_sum = config.at("layers")[5];
  EXPECT_EQ(pair_sum.at("registered_name"), "kestrel_tests>PairSum");
  EXPECT_EQ(pair_sum.at("build_config").at("input_shape"), json::parse("[[null, 4], [null, 4]]"));
  EXPECT_EQ(pair_sum.at("inbound_nodes")[0].at("args")[0].size(), 2U);  // one argument: the list
  EXPECT_EQ(config.at("output_layers"), json::parse(R"(["dense_1", 0, 0])"));
  const json& dense = config.at("layers")[3];
  EXPECT_EQ(dense.at("name"), "dense");
  ASSERT_EQ(dense.at("inbound_nodes").size(), 1U);  // its call on a is not part of this model
  EXPECT_EQ(dense.at("inbound_nodes")[0].at("args")[0].at("config").at("keras_history"), json::parse(R"(["b", 0, 0])"));

  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->get_config(), config);
  copy_weights(model, *copy);
  const Inputs x{{"left", random::normal({3, 6}, random::Key(2))}, {"right", random::normal({3, 6}, random::Key(3))}};
  EXPECT_EQ((*copy)(x).to_vector<float>(), model(x).to_vector<float>());
}

TEST(ModelConfig, ASharedLayerCalledTwiceKeepsBothCallsInOrder) {
  clear_session();
  const Tensor x = Input({5});
  layers::Dense shared(5);
  Model model(x, layers::Dense(1)(shared(shared(x))));
  const json config = model.get_config();
  const json& calls = config.at("layers")[1].at("inbound_nodes");
  ASSERT_EQ(calls.size(), 2U);
  EXPECT_EQ(calls[1].at("args")[0].at("config").at("keras_history"), json::parse(R"(["dense", 0, 0])"));
  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->weights().size(), 4U);
  copy_weights(model, *copy);
  const Tensor data = random::normal({2, 5}, random::Key(4));
  EXPECT_EQ((*copy)(data).to_vector<float>(), model(data).to_vector<float>());
}

TEST(ModelConfig, RecurrentLayersKeepTheirOptions) {
  clear_session();
  const Tensor tokens = Input({7, 3});
  const Tensor sequence = layers::LSTM(4, {.return_sequences = true, .go_backwards = true})(tokens);
  Model model(tokens, layers::GRU(2, {.activation = "relu", .unroll = true, .reset_after = false})(sequence));
  const json config = model.get_config();
  const json& lstm = config.at("layers")[1].at("config");
  EXPECT_EQ(lstm.at("units"), 4);
  EXPECT_EQ(lstm.at("return_sequences"), true);
  EXPECT_EQ(lstm.at("go_backwards"), true);
  EXPECT_EQ(lstm.at("unit_forget_bias"), true);
  EXPECT_EQ(lstm.at("recurrent_initializer").at("class_name"), "Orthogonal");
  EXPECT_EQ(config.at("layers")[2].at("config").at("reset_after"), false);
  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->get_config(), config);
  copy_weights(model, *copy);
  const Tensor x = random::normal({2, 7, 3}, random::Key(5));
  EXPECT_EQ((*copy)(x).to_vector<float>(), model(x).to_vector<float>());

  json dropout = config;
  dropout["layers"][1]["config"]["dropout"] = 0.25;
  const std::string m = error_message<ValueError>([&] { Model::from_config(dropout); });
  EXPECT_TRUE(contains(m, "LSTM")) << m;
  EXPECT_TRUE(contains(m, "dropout")) << m;
}

TEST(LayerConfig, AnInputLayerOfTokenIdsReadsBack) {
  clear_session();
  const Tensor ids = Input({16}, {.name = "ids", .dtype = DType::int32});
  const json object = serialization::serialize_layer(*functional::history(ids)->layer);
  EXPECT_EQ(object.at("config").at("dtype"), "int32");
  const std::unique_ptr<Layer> copy = serialization::deserialize_layer(object);
  const auto& input = dynamic_cast<const layers::InputLayer&>(*copy);
  EXPECT_EQ(input.dtype(), DType::int32);
  EXPECT_EQ(input.shape(), Shape({16}));
}

TEST(ModelConfig, ACycleOrAMissingLayerIsAnErrorNamingTheLayer) {
  clear_session();
  const Tensor x = Input({3});
  const Tensor hidden = layers::Dense(3)(x);
  Model model(x, layers::Dense(2)(hidden));
  json config = model.get_config();
  // Make the first Dense read the second's output: each waits for the other.
  config["layers"][1]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = json::parse(R"(["dense_1", 0, 0])");
  std::string m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, "layer 'dense' (Dense) reads dense_1[0][0]")) << m;
  EXPECT_TRUE(contains(m, "cycle")) << m;
}

}  // namespace
}  // namespace kestrel
