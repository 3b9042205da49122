// Every built-in layer's Keras config: serialize_layer writes Keras 3's keys and values,
// deserialize_layer makes the same layer again (same config, same weight shapes, same output on
// copied weights), and a config Kestrel cannot honour is a ValueError naming the class, the key
// and the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layer_classes.h"
#include "framework/layers/layers.h"
#include "framework/layers/merging.h"
#include "framework/layers/serialization.h"
#include "framework/layers/training_step.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"
#include "tests/support/global_random_stream_guard.h"

namespace kestrel {
namespace {

using nlohmann::json;
using serialization::deserialize_layer;
using serialization::serialize_layer;
using testing::contains;
using testing::error_message;

// One built-in class with options other than its defaults, the input it is called on, and Keras
// keys its config must hold with these literal values.
struct LayerCase {
  std::string class_name;
  std::function<std::unique_ptr<Layer>()> make;
  std::function<std::vector<Tensor>()> inputs;  // one tensor, or the list a merging layer takes
  json expected;
  bool takes_list = false;
  bool training = false;  // Dropout: compare the masks a seed draws
};

template <class T, class... Args>
std::function<std::unique_ptr<Layer>()> maker(Args... args) {
  return [=] { return std::make_unique<T>(args...); };
}

std::function<std::vector<Tensor>()> normal(Shape shape, std::uint64_t seed = 1) {
  return [=] { return std::vector<Tensor>{random::normal(shape, random::Key(seed))}; };
}

std::function<std::vector<Tensor>()> normals(Shape a, Shape b) {
  return [=] { return std::vector<Tensor>{random::normal(a, random::Key(1)), random::normal(b, random::Key(2))}; };
}

json merge_case_config(const std::string& name) { return {{"name", name}, {"trainable", true}}; }

LayerCase merge_case(const std::string& class_name, std::function<std::unique_ptr<Layer>()> make,
                     const std::string& name) {
  return {class_name, std::move(make), normals({2, 3}, {2, 3}), merge_case_config(name), /*takes_list=*/true};
}

const std::vector<LayerCase>& layer_cases() {
  static const std::vector<LayerCase> cases = [] {
    using namespace layers;  // NOLINT(google-build-using-namespace): the table names every layer class
    std::vector<LayerCase> c;
    c.push_back({"Dense",
                 maker<Dense>(5, DenseOptions{.activation = "tanh",
                                              .use_bias = false,
                                              .kernel_initializer = initializers::RandomNormal({.stddev = 0.1})}),
                 normal({2, 3}), json::parse(R"({"units": 5, "activation": "tanh", "use_bias": false,
                   "kernel_initializer": {"module": "keras.initializers", "class_name": "RandomNormal",
                     "config": {"mean": 0.0, "stddev": 0.1, "seed": null}, "registered_name": null},
                   "kernel_regularizer": null})")});
    c.push_back({"InputLayer", maker<InputLayer>(Shape{4, 3}, InputOptions{.name = "pixels", .batch_size = 8}),
                 normal({8, 4, 3}),
                 json::parse(R"({"batch_shape": [8, 4, 3], "dtype": "float32", "sparse": false, "name": "pixels"})")});
    c.push_back({"Activation", maker<Activation>(ActivationFn("softmax"), ActivationOptions{.name = "probs"}),
                 normal({2, 5}), json::parse(R"({"name": "probs", "activation": "softmax"})")});
    c.push_back({"Dropout", maker<Dropout>(0.3, DropoutOptions{.seed = 7}), normal({4, 16}),
                 json::parse(R"({"rate": 0.3, "seed": 7, "noise_shape": null})"), false, /*training=*/true});
    c.push_back({"Flatten", maker<Flatten>(FlattenOptions{.name = "flat"}), normal({2, 3, 4}),
                 json::parse(R"({"name": "flat", "data_format": "channels_last"})")});
    c.push_back({"Conv1D",
                 maker<Conv1D>(4, 3,
                               Conv1DOptions{.padding = "causal",
                                             .dilation_rate = 2,
                                             .activation = "relu",
                                             .use_bias = false,
                                             .kernel_initializer = "he_normal"}),
                 normal({2, 10, 3}), json::parse(R"({"filters": 4, "kernel_size": [3], "strides": [1],
                   "padding": "causal", "data_format": "channels_last", "dilation_rate": [2], "groups": 1,
                   "activation": "relu", "use_bias": false,
                   "kernel_initializer": {"module": "keras.initializers", "class_name": "HeNormal",
                     "config": {"seed": null}, "registered_name": null},
                   "kernel_regularizer": null, "activity_regularizer": null, "bias_constraint": null})")});
    c.push_back({"Conv2D",
                 maker<Conv2D>(4, std::array<int, 2>{2, 3},
                               Conv2DOptions{.strides = {2, 1},
                                             .padding = "same",
                                             .activation = "relu",
                                             .bias_initializer = initializers::Constant(0.5)}),
                 normal({2, 6, 5, 3}), json::parse(R"({"filters": 4, "kernel_size": [2, 3], "strides": [2, 1],
                   "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
                   "bias_initializer": {"module": "keras.initializers", "class_name": "Constant",
                     "config": {"value": 0.5}, "registered_name": null},
                   "bias_regularizer": null, "kernel_constraint": null})")});
    c.push_back({"MaxPooling2D",
                 maker<MaxPooling2D>(Pooling2DOptions{.pool_size = {3, 2}, .strides = {1, 2}, .padding = "same"}),
                 normal({2, 6, 6, 3}), json::parse(R"({"pool_size": [3, 2], "strides": [1, 2], "padding": "same",
                   "data_format": "channels_last"})")});
    // Strides left to default to the pool size are written out, as Keras writes them.
    c.push_back({"AveragePooling2D", maker<AveragePooling2D>(Pooling2DOptions{.pool_size = {3, 3}}),
                 normal({2, 7, 7, 2}), json::parse(R"({"pool_size": [3, 3], "strides": [3, 3], "padding": "valid"})")});
    for (const char* name : {"GlobalAveragePooling1D", "GlobalMaxPooling1D"}) {
      const bool average = std::string(name) == "GlobalAveragePooling1D";
      c.push_back({name,
                   average ? maker<GlobalAveragePooling1D>(GlobalPoolingOptions{.keepdims = true})
                           : maker<GlobalMaxPooling1D>(GlobalPoolingOptions{.keepdims = true}),
                   normal({2, 5, 3}), json::parse(R"({"keepdims": true, "data_format": "channels_last"})")});
    }
    for (const char* name : {"GlobalAveragePooling2D", "GlobalMaxPooling2D"}) {
      const bool average = std::string(name) == "GlobalAveragePooling2D";
      c.push_back({name,
                   average ? maker<GlobalAveragePooling2D>(GlobalPoolingOptions{.keepdims = true})
                           : maker<GlobalMaxPooling2D>(GlobalPoolingOptions{.keepdims = true}),
                   normal({2, 4, 4, 3}), json::parse(R"({"keepdims": true, "data_format": "channels_last"})")});
    }
    c.push_back({"Reshape", maker<Reshape>(std::vector<std::int64_t>{-1, 4}), normal({2, 3, 8}),
                 json::parse(R"({"target_shape": [-1, 4]})")});
    c.push_back(
        {"Permute", maker<Permute>(std::vector<int>{2, 1}), normal({2, 3, 4}), json::parse(R"({"dims": [2, 1]})")});
    c.push_back({"ZeroPadding2D", maker<ZeroPadding2D>(ZeroPadding2DOptions{.padding = Padding2DArg({0, 1}, {2, 3})}),
                 normal({1, 3, 3, 2}),
                 json::parse(R"({"padding": [[0, 1], [2, 3]], "data_format": "channels_last"})")});
    c.push_back({"UpSampling2D", maker<UpSampling2D>(UpSampling2DOptions{.size = {1, 3}}), normal({1, 2, 2, 2}),
                 json::parse(R"({"size": [1, 3], "data_format": "channels_last", "interpolation": "nearest"})")});
    c.push_back(
        {"BatchNormalization",
         maker<BatchNormalization>(BatchNormalizationOptions{.axis = 1,
                                                             .momentum = 0.9,
                                                             .epsilon = 0.01,
                                                             .center = false,
                                                             .moving_variance_initializer = initializers::Constant(2.0),
                                                             .synchronized = true}),
         normal({4, 3, 5}), json::parse(R"({"axis": 1, "momentum": 0.9, "epsilon": 0.01, "center": false,
                   "scale": true, "synchronized": true,
                   "moving_variance_initializer": {"module": "keras.initializers", "class_name": "Constant",
                     "config": {"value": 2.0}, "registered_name": null},
                   "beta_regularizer": null, "gamma_constraint": null})")});
    c.push_back({"LayerNormalization",
                 maker<LayerNormalization>(LayerNormalizationOptions{
                     .epsilon = 1e-6, .scale = false, .beta_initializer = initializers::Constant(0.25)}),
                 normal({2, 3, 6}), json::parse(R"({"axis": -1, "epsilon": 1e-6, "center": true, "scale": false,
                   "rms_scaling": false,
                   "beta_initializer": {"module": "keras.initializers", "class_name": "Constant",
                     "config": {"value": 0.25}, "registered_name": null},
                   "gamma_regularizer": null})")});
    c.push_back({"Embedding",
                 maker<Embedding>(10, 4,
                                  EmbeddingOptions{.embeddings_initializer =
                                                       initializers::RandomNormal({.mean = 0.5, .stddev = 0.2})}),
                 [] {
                   return std::vector<Tensor>{Tensor::from_vector<std::int32_t>({1, 9, 0, 3, 3, 7}, {2, 3})};
                 },
                 json::parse(R"({"input_dim": 10, "output_dim": 4, "mask_zero": false,
                   "embeddings_initializer": {"module": "keras.initializers", "class_name": "RandomNormal",
                     "config": {"mean": 0.5, "stddev": 0.2, "seed": null}, "registered_name": null},
                   "embeddings_regularizer": null, "embeddings_constraint": null})")});
    c.push_back(merge_case("Add", maker<Add>(MergeOptions{.name = "sum"}), "sum"));
    c.push_back(merge_case("Subtract", maker<Subtract>(MergeOptions{.name = "difference"}), "difference"));
    c.push_back(merge_case("Multiply", maker<Multiply>(MergeOptions{.name = "product"}), "product"));
    c.push_back(merge_case("Average", maker<Average>(MergeOptions{.name = "mean"}), "mean"));
    c.push_back(merge_case("Maximum", maker<Maximum>(MergeOptions{.name = "most"}), "most"));
    c.push_back(merge_case("Minimum", maker<Minimum>(MergeOptions{.name = "least"}), "least"));
    c.push_back({"Concatenate", maker<Concatenate>(ConcatenateOptions{.axis = 1}), normals({2, 3, 4}, {2, 2, 4}),
                 json::parse(R"({"axis": 1})"), /*takes_list=*/true});
    return c;
  }();
  return cases;
}

// The layers made here draw their weights from the global random stream; it is put back where it
// was, so the tests after these in the executable draw what they would alone.
class KeepsGlobalRandomStream : public ::testing::Test {
 private:
  testing::GlobalRandomStreamGuard stream_;
};
using LayerConfigRoundTrip = KeepsGlobalRandomStream;
using LayerConfigErrors = KeepsGlobalRandomStream;

const LayerCase* find_case(const std::string& class_name) {
  for (const LayerCase& c : layer_cases()) {
    if (c.class_name == class_name) return &c;
  }
  return nullptr;
}

// Calls the layer as its case says, in a fresh training step so a seeded Dropout draws its first mask.
Tensor call(Layer& layer, const LayerCase& c, const std::vector<Tensor>& xs) {
  const layers::TrainingStepScope step(0);
  return c.takes_list ? layer(xs, c.training) : layer(xs.front(), c.training);
}

// The layer of a case, built by a call, and its Keras object.
struct Serialized {
  std::unique_ptr<Layer> layer;
  json object;
};

Serialized serialized(const LayerCase& c) {
  clear_session();
  Serialized s{c.make(), json()};
  call(*s.layer, c, c.inputs());
  s.object = serialize_layer(*s.layer);
  return s;
}

void expect_round_trip(const LayerCase& c) {
  SCOPED_TRACE(c.class_name);
  const Serialized original = serialized(c);
  const json& object = original.object;
  EXPECT_EQ(object.at("module"), "keras.layers");
  EXPECT_EQ(object.at("class_name"), c.class_name);
  EXPECT_TRUE(object.at("registered_name").is_null());
  for (const auto& [key, value] : c.expected.items()) {
    ASSERT_TRUE(object.at("config").contains(key)) << key;
    EXPECT_EQ(object.at("config").at(key), value) << key;
  }

  const std::unique_ptr<Layer> copy = deserialize_layer(object);
  const Layer& copied = *copy;
  const Layer& made = *original.layer;
  EXPECT_TRUE(typeid(copied) == typeid(made)) << typeid(copied).name();
  EXPECT_EQ(serialize_layer(*copy), object);
  EXPECT_EQ(copy->built(), original.layer->built());
  const std::vector<Variable> source = original.layer->weights();
  const std::vector<Variable> target = copy->weights();
  ASSERT_EQ(target.size(), source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(target[i].name(), source[i].name());
    EXPECT_EQ(target[i].shape(), source[i].shape()) << source[i].name();
    EXPECT_EQ(target[i].trainable(), source[i].trainable()) << source[i].name();
    target[i].assign(source[i].value());
  }
  const std::vector<Tensor> xs = c.inputs();
  const Tensor expected = call(*original.layer, c, xs);
  const Tensor got = call(*copy, c, xs);
  EXPECT_EQ(got.spec(), expected.spec()) << got.spec().to_string() << " vs " << expected.spec().to_string();
  EXPECT_EQ(got.to_vector<float>(), expected.to_vector<float>());
}

TEST_F(LayerConfigRoundTrip, EveryBuiltInLayerWritesKerasKeysAndIsMadeAgainFromThem) {
  for (const LayerCase& c : layer_cases()) expect_round_trip(c);
}

TEST_F(LayerConfigRoundTrip, ALayerWithItsOwnPolicyAndFrozenWeightsKeepsBoth) {
  clear_session();
  layers::LayerNormalization norm({.name = "norm", .dtype = "mixed_bfloat16"});
  norm.set_trainable(false);
  norm(random::normal({2, 4}, random::Key(3)));
  const json object = serialize_layer(norm);
  EXPECT_EQ(object.at("config").at("trainable"), false);
  EXPECT_EQ(object.at("config").at("dtype").at("config").at("name"), "mixed_bfloat16");
  const std::unique_ptr<Layer> copy = deserialize_layer(object);
  EXPECT_EQ(copy->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_FALSE(copy->trainable());
  EXPECT_EQ(copy->weights().front().dtype(), DType::float32);
  EXPECT_EQ(serialize_layer(*copy), object);
}

// The classes layer_classes.cpp lists, read from its source: the list is private to that file,
// and a class added there without a case here should fail this test.
TEST_F(LayerConfigRoundTrip, EveryClassOfTheBuiltInListReadsItsConfig) {
  const std::vector<std::string> names = builtin_layer_class_names();
  ASSERT_EQ(names.size(), 31U);  // every layer class Kestrel has
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const LayerClass* entry = find_builtin_layer_class(name);
    ASSERT_NE(entry, nullptr);
    EXPECT_TRUE(entry->from_config) << name << " has no static from_config";
    // Their own tests round-trip these: the recurrent layers in tests/framework/model/
    // model_config_test.cpp, the attention layers below (they take their own call arguments).
    if (name == "LSTM" || name == "GRU" || name == "MultiHeadAttention" || name == "TransformerEncoder") continue;
    const LayerCase* c = find_case(name);
    ASSERT_NE(c, nullptr) << "no case for " << name << " in layer_cases()";
    const Serialized s = serialized(*c);
    const std::unique_ptr<Layer> copy = deserialize_layer(s.object);
    EXPECT_EQ(copy->class_name(), name);
    EXPECT_EQ(copy->name(), s.layer->name());
  }
}

// MultiHeadAttention and TransformerEncoder take their own call arguments, so Functional models
// do not record them; their configs round-trip all the same.
TEST_F(LayerConfigRoundTrip, MultiHeadAttentionWritesKerasKeysAndIsMadeAgain) {
  clear_session();
  layers::MultiHeadAttention mha(
      2, 3,
      {.value_dim = 5, .dropout = 0.25, .use_bias = false, .output_shape = 7, .bias_initializer = "ones", .seed = 11});
  const Tensor q = random::normal({2, 4, 6}, random::Key(1));
  const Tensor v = random::normal({2, 5, 6}, random::Key(2));
  const Tensor y = mha(q, v);
  const json config = mha.get_config();
  EXPECT_EQ(config, json::parse(R"({"name": "multi_head_attention", "trainable": true,
    "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
    "num_heads": 2, "key_dim": 3, "value_dim": 5, "dropout": 0.25, "use_bias": false, "output_shape": [7],
    "attention_axes": null,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null},
                           "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
    "kernel_regularizer": null, "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null,
    "bias_constraint": null, "seed": 11})"));

  layers::MultiHeadAttention copy = layers::MultiHeadAttention::from_config(config);
  EXPECT_EQ(copy.get_config(), config);
  copy(q, v);
  const std::vector<Variable> source = mha.weights();
  const std::vector<Variable> target = copy.weights();
  ASSERT_EQ(target.size(), 4U);  // query, key and value kernels, output kernel: no biases
  ASSERT_EQ(target.size(), source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(target[i].shape(), source[i].shape()) << source[i].name();
    target[i].assign(source[i].value());
  }
  EXPECT_EQ(copy(q, v).to_vector<float>(), y.to_vector<float>());
  // Keras's value_dim null means key_dim; a config from a newer Keras may hold use_gate and sliding_window.
  json keras = config;
  keras["value_dim"] = nullptr;
  keras["output_shape"] = 7;
  keras["use_gate"] = false;
  keras["sliding_window"] = nullptr;
  const layers::MultiHeadAttention read = layers::MultiHeadAttention::from_config(keras);
  EXPECT_EQ(read.value_dim(), 3);
  EXPECT_EQ(read.options().output_shape, 7);
}

TEST_F(LayerConfigRoundTrip, TransformerEncoderWritesKerasHubKeysAndIsMadeAgain) {
  clear_session();
  layers::TransformerEncoder block({.intermediate_dim = 16,
                                    .num_heads = 2,
                                    .dropout = 0.1,
                                    .activation = "gelu",
                                    .layer_norm_epsilon = 1e-6,
                                    .kernel_initializer = initializers::TruncatedNormal({.stddev = 0.02}),
                                    .normalize_first = true,
                                    .name = "block"});
  const Tensor x = random::normal({2, 3, 8}, random::Key(4));
  const Tensor y = block(x);
  const json config = block.get_config();
  EXPECT_EQ(config, json::parse(R"({"name": "block", "trainable": true,
    "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
    "intermediate_dim": 16, "num_heads": 2, "dropout": 0.1, "activation": "gelu", "layer_norm_epsilon": 1e-6,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "TruncatedNormal",
                           "config": {"mean": 0.0, "stddev": 0.02, "seed": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
    "normalize_first": true})"));

  layers::TransformerEncoder copy = layers::TransformerEncoder::from_config(config);
  EXPECT_EQ(copy.get_config(), config);
  copy(x);
  const std::vector<Variable> source = block.weights();
  const std::vector<Variable> target = copy.weights();
  ASSERT_EQ(target.size(), source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(target[i].name(), source[i].name());
    EXPECT_EQ(target[i].shape(), source[i].shape()) << source[i].name();
    target[i].assign(source[i].value());
  }
  EXPECT_EQ(copy(x).to_vector<float>(), y.to_vector<float>());
}

// Kestrel writes what Keras 3.6 to 3.12 write, so those releases load its files; keys added since
// (at their defaults) are read.
TEST_F(LayerConfigRoundTrip, KeysLaterKerasReleasesAddedAreReadButNotWritten) {
  const LayerCase* norm = find_case("BatchNormalization");
  ASSERT_NE(norm, nullptr);
  json object = serialized(*norm).object;
  for (const char* key : {"renorm", "renorm_clipping", "renorm_momentum"}) {
    EXPECT_FALSE(object.at("config").contains(key)) << key;
  }
  json keras_3_14 = object;
  keras_3_14["config"].update(json::parse(R"({"renorm": false, "renorm_clipping": null, "renorm_momentum": 0.99})"));
  EXPECT_EQ(serialize_layer(*deserialize_layer(keras_3_14)), object);

  const LayerCase* embedding = find_case("Embedding");
  ASSERT_NE(embedding, nullptr);
  object = serialized(*embedding).object;
  EXPECT_FALSE(object.at("config").contains("quantization_config"));
  json keras_3_13 = object;
  keras_3_13["config"]["quantization_config"] = nullptr;
  EXPECT_EQ(serialize_layer(*deserialize_layer(keras_3_13)), object);

  const json mha = layers::MultiHeadAttention(2, 4).get_config();
  EXPECT_FALSE(mha.contains("use_gate"));
  EXPECT_FALSE(mha.contains("sliding_window"));
}

// The case's Keras object with config[key] = value.
json with(const std::string& class_name, const std::string& key, const json& value) {
  const LayerCase* c = find_case(class_name);
  if (c == nullptr) {
    ADD_FAILURE() << "no case for " << class_name;
    return json();
  }
  json object = serialized(*c).object;
  object["config"][key] = value;
  return object;
}

std::string read_error(const json& object) {
  return error_message<ValueError>([&] { deserialize_layer(object); });
}

TEST_F(LayerConfigErrors, ARegularizerOrConstraintIsAnErrorNamingTheClassKeyAndValue) {
  EXPECT_EQ(read_error(with("Conv2D", "kernel_regularizer", json::parse(R"({"class_name": "L2",
                                                                           "config": {"l2": 0.01}})"))),
            "layer class 'Conv2D': 'kernel_regularizer' is {\"class_name\":\"L2\",\"config\":{\"l2\":0.01}}, which "
            "Kestrel does not support; Kestrel has no regularizers: add the penalty to the loss yourself, and set "
            "'kernel_regularizer' to null");
  // Every null that stands for a regularizer or constraint is checked, in every class but Dense
  // and InputLayer, whose readers are older than these checks.
  const json l1 = json::parse(R"({"class_name": "L1", "config": {"l1": 0.5}})");
  for (const LayerCase& c : layer_cases()) {
    // activity_regularizer is an option of every Keras layer, checked for every class.
    const std::string m = read_error(with(c.class_name, "activity_regularizer", l1));
    EXPECT_TRUE(contains(m, "'activity_regularizer'")) << c.class_name << ": " << m;
    if (c.class_name == "Dense" || c.class_name == "InputLayer") continue;
    const json object = serialized(c).object;
    for (const auto& [key, value] : object.at("config").items()) {
      if (!value.is_null() || (!key.ends_with("_regularizer") && !key.ends_with("_constraint"))) continue;
      const std::string m = read_error(with(c.class_name, key, l1));
      EXPECT_TRUE(contains(m, "layer class '" + c.class_name + "': '" + key + "' is " + l1.dump())) << m;
    }
  }
}

TEST_F(LayerConfigErrors, ChannelsFirstIsAnErrorForEveryLayerWithADataFormat) {
  int checked = 0;
  for (const LayerCase& c : layer_cases()) {
    const json object = serialized(c).object;
    if (!object.at("config").contains("data_format")) continue;
    ++checked;
    const std::string m = read_error(with(c.class_name, "data_format", "channels_first"));
    EXPECT_TRUE(contains(m, "layer class '" + c.class_name +
                                "': 'data_format' is \"channels_first\", which Kestrel "
                                "does not support"))
        << m;
    EXPECT_TRUE(contains(m, "channels last")) << m;
  }
  EXPECT_EQ(checked, 11);  // Flatten, Conv1D/2D, two pooling, four global pooling, ZeroPadding2D, UpSampling2D
}

TEST_F(LayerConfigErrors, OptionsKestrelLacksAreErrorsUnlessAtTheirDefault) {
  struct Unsupported {
    std::string class_name, key;
    json value;
    std::string fix;
  };
  const std::vector<Unsupported> cases = {
      {"Conv1D", "groups", 2, "set 'groups' to 1"},
      {"Conv2D", "dilation_rate", json::parse("[2, 2]"), "set 'dilation_rate' to [1, 1]"},
      {"Conv2D", "lora_rank", 4, "set it to null"},
      {"Dropout", "noise_shape", json::parse("[null, 1]"), "set 'noise_shape' to null"},
      {"BatchNormalization", "renorm", true, "no batch renormalization"},
      {"BatchNormalization", "renorm_momentum", 0.9, "'renorm_momentum' to 0.99"},
      {"LayerNormalization", "axis", 1, "set 'axis' to -1"},
      {"LayerNormalization", "rms_scaling", true, "set 'rms_scaling' to false"},
      {"Embedding", "mask_zero", true, "set 'mask_zero' to false"},
      {"Embedding", "quantization_config", json::parse(R"({"mode": "int8"})"), "set it to null"},
  };
  for (const Unsupported& u : cases) {
    const std::string m = read_error(with(u.class_name, u.key, u.value));
    EXPECT_TRUE(contains(m, "layer class '" + u.class_name + "': '" + u.key + "' is " + u.value.dump() +
                                ", which Kestrel does not support"))
        << m;
    EXPECT_TRUE(contains(m, u.fix)) << m;
  }
  // The values Kestrel behaves as read fine, in either of Keras's forms.
  EXPECT_NO_THROW(deserialize_layer(with("LayerNormalization", "axis", json::parse("[-1]"))));
  EXPECT_NO_THROW(deserialize_layer(with("Conv2D", "dilation_rate", 1)));
  EXPECT_NO_THROW(deserialize_layer(with("Flatten", "data_format", nullptr)));
  EXPECT_EQ(deserialize_layer(with("UpSampling2D", "interpolation", "NEAREST"))->get_config().at("interpolation"),
            "nearest");

  const std::string bilinear = read_error(with("UpSampling2D", "interpolation", "bilinear"));
  EXPECT_TRUE(contains(bilinear, "(UpSampling2D): interpolation \"bilinear\" is not supported")) << bilinear;

  json mha = layers::MultiHeadAttention(2, 4).get_config();
  for (const auto& [key, value] : {std::pair<std::string, json>{"attention_axes", json::parse("[2]")},
                                   {"use_gate", true},
                                   {"sliding_window", 16},
                                   {"kernel_constraint", "non_neg"}}) {
    json config = mha;
    config[key] = value;
    const std::string m = error_message<ValueError>([&] { layers::MultiHeadAttention::from_config(config); });
    EXPECT_TRUE(contains(m, "layer class 'MultiHeadAttention': '" + key + "' is " + value.dump())) << m;
  }
}

TEST_F(LayerConfigErrors, AValueOfTheWrongTypeIsAnErrorNamingTheKeyAndValue) {
  EXPECT_EQ(read_error(with("Conv2D", "kernel_size", "3")),
            "layer class 'Conv2D': 'kernel_size' in the config is string \"3\"; it must be a whole number or a list "
            "of 2 of them");
  EXPECT_EQ(read_error(with("Conv1D", "strides", json::parse("[1.5]"))),
            "layer class 'Conv1D': 'strides' in the config is array [1.5]; it must be a whole number or a list of 1 "
            "of them");
  EXPECT_EQ(read_error(with("Dropout", "rate", "half")),
            "layer class 'Dropout': 'rate' in the config is string \"half\", which does not fit this option");
  EXPECT_EQ(read_error(with("Dropout", "seed", -3)),
            "layer class 'Dropout': 'seed' in the config is number -3; it must be a whole number, 0 or more, or null "
            "to draw from the global random stream");
  EXPECT_EQ(read_error(with("LayerNormalization", "center", 1)),
            "layer class 'LayerNormalization': 'center' in the config is number 1, which does not fit this option");
  EXPECT_EQ(read_error(with("Concatenate", "axis", "last")),
            "layer class 'Concatenate': 'axis' in the config is string \"last\", which does not fit this option");
  EXPECT_EQ(read_error(with("ZeroPadding2D", "padding", json::parse("[[1, 2, 3], 0]"))),
            "layer class 'ZeroPadding2D': 'padding' in the config is [[1,2,3],0]; it must be an int, [height, width] "
            "or [[top, bottom], [left, right]]");
  EXPECT_EQ(read_error(with("Conv1D", "padding", "full")),
            "layer class 'Conv1D': 'padding' in the config is \"full\"; expected \"valid\", \"same\" or \"causal\"");
  EXPECT_EQ(read_error(with("MaxPooling2D", "padding", "causal")),
            "layer class 'MaxPooling2D': 'padding' in the config is \"causal\"; expected \"valid\" or \"same\"");
  const std::string missing = read_error(with("Reshape", "target_shape", nullptr));
  EXPECT_TRUE(contains(missing, "layer class 'Reshape': 'target_shape' in the config is null")) << missing;

  json mha = layers::MultiHeadAttention(2, 4).get_config();
  mha["output_shape"] = json::parse("[3, 5]");
  EXPECT_EQ(error_message<ValueError>([&] { layers::MultiHeadAttention::from_config(mha); }),
            "layer class 'MultiHeadAttention': 'output_shape' in the config is [3,5]; Kestrel's MultiHeadAttention "
            "takes one output dim, as an int or a list of one int");
}

TEST_F(LayerConfigErrors, KerasFormsOfTupleOptionsAreRead) {
  // Keras takes an int for every entry of a tuple option, and any of ZeroPadding2D's three forms.
  const std::unique_ptr<Layer> conv = deserialize_layer(with("Conv2D", "strides", 2));
  EXPECT_EQ(conv->get_config().at("strides"), json::parse("[2, 2]"));
  const std::unique_ptr<Layer> pad = deserialize_layer(with("ZeroPadding2D", "padding", json::parse("[2, [0, 1]]")));
  EXPECT_EQ(pad->get_config().at("padding"), json::parse("[[2, 2], [0, 1]]"));
  const std::unique_ptr<Layer> pad_all = deserialize_layer(with("ZeroPadding2D", "padding", 3));
  EXPECT_EQ(pad_all->get_config().at("padding"), json::parse("[[3, 3], [3, 3]]"));
  const std::unique_ptr<Layer> pool = deserialize_layer(with("AveragePooling2D", "strides", nullptr));
  EXPECT_EQ(pool->get_config().at("strides"), json::parse("[3, 3]"));  // null: the pool size
  const std::unique_ptr<Layer> same = deserialize_layer(with("Conv2D", "padding", "SAME"));
  EXPECT_EQ(same->get_config().at("padding"), "same");
}

}  // namespace
}  // namespace kestrel
