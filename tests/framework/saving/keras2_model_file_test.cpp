// model.save("m.h5") and models::load_model("m.h5"): Keras 2's full-model file, written and read
// back, checked with h5py, and read from files in tf.keras 2's own layout written by h5py.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "framework/saving/model_file.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;
using testing::LogCapture;
using testing::ScratchDir;

void expect_same_state(const Model& a, const Model& b) {
  testing::expect_same_weights(a, b);
  if (a.compiled()) testing::expect_same_optimizer_state(a, b);
}

void compile_adam(Model& model) {
  // A learning rate a float32 holds exactly, so that the file's JSON shows it as written.
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.0078125}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

struct Data {
  Tensor x = random::normal({32, 5}, random::Key(8));
  Tensor y = random::randint({32}, random::Key(9), 0, 3);
};

FitOptions quiet(int epochs) { return {.batch_size = 8, .epochs = epochs, .verbose = 0, .shuffle = false}; }

// Saved after training and loaded back, a model has the same weights and optimizer state, and
// fit goes on exactly as the original's does.
void expect_round_trip_continues_exactly(Model& model, const std::string& path) {
  const Data data;
  compile_adam(model);
  model.fit(data.x, data.y, quiet(1));
  model.save(path);
  const std::unique_ptr<Model> loaded = models::load_model(path);
  EXPECT_EQ(loaded->class_name(), model.class_name());
  EXPECT_EQ(loaded->name(), model.name());
  ASSERT_TRUE(loaded->compiled());
  EXPECT_EQ(loaded->optimizer()->iterations(), 4);
  expect_same_state(model, *loaded);
  EXPECT_EQ((*loaded)(data.x).to_vector<float>(), model(data.x).to_vector<float>());
  const History more = model.fit(data.x, data.y, quiet(2));
  const History loaded_more = loaded->fit(data.x, data.y, quiet(2));
  EXPECT_EQ(loaded_more.history.at("loss"), more.history.at("loss"));
  EXPECT_EQ(loaded_more.history.at("accuracy"), more.history.at("accuracy"));
  expect_same_state(model, *loaded);
}

TEST(Keras2ModelFile, ASequentialModelRoundTripsAndTrainingContinuesExactly) {
  clear_session();
  random::set_global_seed(4);
  ScratchDir dir;
  Sequential model({layers::Dense(8, {.activation = "relu"}), layers::BatchNormalization(), layers::Dense(3)}, "mlp");
  model.build({1, 5});
  expect_round_trip_continues_exactly(model, dir.file("mlp.h5"));
}

TEST(Keras2ModelFile, AFunctionalModelRoundTripsAndTrainingContinuesExactly) {
  clear_session();
  random::set_global_seed(5);
  ScratchDir dir;
  const Tensor inputs = Input({5}, {.name = "features"});
  const Tensor hidden = layers::Dense(8, {.activation = "relu"})(inputs);
  Model model(inputs, layers::Dense(3)(layers::Add()({hidden, layers::Dense(8)(inputs)})), "residual");
  expect_round_trip_continues_exactly(model, dir.file("residual.h5"));
}

TEST(Keras2ModelFile, AModelSavedUncompiledLoadsUncompiled) {
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(2)});
  model.build({1, 3});
  model.save(dir.file("m.h5"));
  const std::unique_ptr<Model> loaded = models::load_model(dir.file("m.h5"));
  EXPECT_FALSE(loaded->compiled());
  expect_same_state(model, *loaded);
}

// The file as Keras's own reader sees it, through h5py and json.
TEST(Keras2ModelFile, PythonReadsTheFileInKerasLayout) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(4, {.activation = "relu"}), layers::Dense(2)}, "mlp");
  model.build({1, 3});
  compile_adam(model);
  model.fit(random::normal({8, 3}, random::Key(1)), random::randint({8}, random::Key(2), 0, 2), quiet(1));
  const std::string path = dir.file("mlp.h5");
  model.save(path);
  const std::string out = testing::run_python(dir, R"(
import json, sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(sorted(f.attrs.keys()), sorted(f.keys()))
    m = json.loads(f.attrs["model_config"])
    print(sorted(m.keys()), m["class_name"], sorted(m["config"].keys()))
    print([(l["class_name"], sorted(l.keys())) for l in m["config"]["layers"]])
    print(m["config"]["layers"][1]["config"]["kernel_initializer"]["class_name"])
    t = json.loads(f.attrs["training_config"])
    print(sorted(t.keys()))
    print(t["optimizer_config"]["class_name"], t["optimizer_config"]["config"]["learning_rate"], t["loss"]["class_name"],
          t["metrics"])
    g = f["model_weights"]
    print([n.decode() for n in g.attrs["layer_names"]], [n.decode() for n in g["dense"].attrs["weight_names"]])
    print(g["dense/dense/kernel:0"].shape, g["dense_1/dense_1/bias:0"].shape)
    o = f["optimizer_weights"]
    print(len(o.attrs["weight_names"]), int(o[o.attrs["weight_names"][0]][()]))
)",
                                              path);
  EXPECT_TRUE(contains(out,
                       "['backend', 'keras_version', 'model_config', 'training_config'] "
                       "['model_weights', 'optimizer_weights']"))
      << out;
  EXPECT_TRUE(contains(out,
                       "['class_name', 'config'] Sequential ['build_input_shape', 'dtype', 'layers', 'name', "
                       "'trainable']"))
      << out;
  EXPECT_TRUE(contains(out,
                       "[('InputLayer', ['class_name', 'config']), ('Dense', ['class_name', 'config']), "
                       "('Dense', ['class_name', 'config'])]"))
      << out;
  EXPECT_TRUE(contains(out, "GlorotUniform")) << out;
  EXPECT_TRUE(contains(out,
                       "['jit_compile', 'loss', 'loss_weights', 'metrics', 'optimizer_config', 'run_eagerly', "
                       "'steps_per_execution', 'weighted_metrics']"))
      << out;
  EXPECT_TRUE(contains(out, "Adam 0.0078125 SparseCategoricalCrossentropy ['accuracy']")) << out;
  EXPECT_TRUE(contains(out, "['dense', 'dense_1'] ['dense/kernel:0', 'dense/bias:0']")) << out;
  EXPECT_TRUE(contains(out, "(3, 4) (2,)")) << out;
  // iteration, learning rate, and a momentum and a velocity per weight: Adam's 2 + 2 * 4.
  EXPECT_TRUE(contains(out, "10 1")) << out;
}

// A file as tf.keras 2.15 writes it (h5py following its saving code): a Sequential model with
// batch_input_shape, a normalization axis as a list, "Custom>Adam", a loss reduction of "auto"
// and the accuracy metric as a MeanMetricWrapper. Returns what the script printed: the model's
// outputs for `x`, computed by NumPy from the stored weights.
const std::string kWriteKeras2Sequential = std::string(testing::kKeras2FileWriters) + R"(
bn = {"class_name": "BatchNormalization", "config": {
    "name": "batch_normalization", "trainable": True, "dtype": "float32", "axis": [1], "momentum": 0.99,
    "epsilon": 0.001, "center": True, "scale": True, "beta_initializer": init("Zeros"),
    "gamma_initializer": init("Ones"), "moving_mean_initializer": init("Zeros"),
    "moving_variance_initializer": init("Ones"), "beta_regularizer": None, "gamma_regularizer": None,
    "beta_constraint": None, "gamma_constraint": None}}
layers = [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 3], "dtype": "float32", "sparse": False,
                                            "ragged": False, "name": "dense_input"}},
    dense("dense", 4, "relu", {"batch_input_shape": [None, 3]}), bn, dense("dense_1", 2, "linear")]
model_config = {"class_name": "Sequential", "config": {"name": "sequential", "layers": layers}}
training_config = {
    "loss": {"class_name": "SparseCategoricalCrossentropy",
             "config": {"reduction": "auto", "name": "sparse_categorical_crossentropy", "from_logits": True,
                        "ignore_class": None}},
    "metrics": [[{"class_name": "MeanMetricWrapper",
                  "config": {"name": "accuracy", "dtype": "float32", "fn": "sparse_categorical_accuracy"}}]],
    "weighted_metrics": None, "loss_weights": None, "optimizer_config": adam_config}
k1 = (np.arange(12, dtype="float32").reshape(3, 4) - 5) / 10; b1 = np.array([0.1, -0.2, 0.3, 0.0], "float32")
gamma = np.array([1.5, 0.5, 1.0, 2.0], "float32"); beta = np.array([0.1, 0.2, -0.1, 0.0], "float32")
mean = np.array([0.2, 0.1, 0.0, 0.3], "float32"); var = np.array([1.0, 0.5, 2.0, 0.25], "float32")
k2 = (np.arange(8, dtype="float32").reshape(4, 2) - 3) / 7; b2 = np.array([0.05, -0.05], "float32")
weights = {"dense": [("kernel", k1), ("bias", b1)],
           "batch_normalization": [("gamma", gamma), ("beta", beta), ("moving_mean", mean), ("moving_variance", var)],
           "dense_1": [("kernel", k2), ("bias", b2)]}
with h5py.File(sys.argv[1], "w") as f:
    write_keras2_file(f, model_config, training_config, ["dense", "batch_normalization", "dense_1"], weights)
    # tf.keras 2's Adam keeps the iteration count and a momentum and a velocity per trainable
    # weight, and not the learning rate as Keras 3's does.
    trainable = [(l, w, v) for l, values in weights.items() for w, v in values if not w.startswith("moving")]
    names = ["iteration:0"] + ["Adam/%s/%s/%s:0" % (slot, l, w) for l, w, _ in trainable for slot in ("m", "v")]
    o = f.create_group("optimizer_weights")
    o.attrs["weight_names"] = [n.encode() for n in names]
    o.create_dataset(names[0], data=np.int64(7))
    for n, (_, _, v) in zip(names[1::2], trainable):
        o.create_dataset(n, data=np.zeros_like(v))
        o.create_dataset(n.replace("/m/", "/v/"), data=np.zeros_like(v))
x = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]], "float32")
h = np.maximum(x @ k1 + b1, 0)
h = (h - mean) / np.sqrt(var + 0.001) * gamma + beta
print(" ".join("%.6f" % v for v in (h @ k2 + b2).ravel()))
)";

std::vector<float> parse_floats(const std::string& text) {
  std::istringstream in(text);
  std::vector<float> out;
  for (float v = 0; in >> v;) out.push_back(v);
  return out;
}

TEST(Keras2ModelFile, AFileTfKeras2WroteLoadsCompiledWithItsWeights) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  const std::string path = dir.file("tf_keras.h5");
  const std::vector<float> expected = parse_floats(testing::run_python(dir, kWriteKeras2Sequential, path));
  ASSERT_EQ(expected.size(), 4u);

  LogCapture log("kestrel.saving");
  const std::unique_ptr<Model> model = models::load_model(path);
  EXPECT_EQ(model->class_name(), "Sequential");
  ASSERT_EQ(model->layers().size(), 3u);
  // The optimizer state does not fit Keras 3's Adam (no learning rate): as Keras's load_model
  // does, the model loads with a fresh optimizer state, and says so.
  EXPECT_TRUE(contains(log.text(), "skipping the optimizer state (training starts from a fresh one)")) << log.text();
  EXPECT_TRUE(contains(log.text(), "has 14 variables, the file's optimizer state has 13")) << log.text();
  EXPECT_EQ(model->optimizer()->iterations(), 0);
  EXPECT_EQ(model->layers()[1]->class_name(), "BatchNormalization");
  const std::vector<float> got =
      (*model)(Tensor::from_vector<float>({0.5f, -1, 2, 1, 0, -0.5f}, {2, 3})).to_vector<float>();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-5) << i;

  ASSERT_TRUE(model->compiled());
  EXPECT_EQ(model->optimizer()->name(), "Adam");
  EXPECT_FLOAT_EQ(model->optimizer()->learning_rate(), 5e-4);
  const History history = model->fit(Tensor::from_vector<float>({0.5f, -1, 2, 1, 0, -0.5f}, {2, 3}),
                                     Tensor::from_vector<std::int32_t>({0, 1}, {2}), quiet(1));
  EXPECT_TRUE(history.history.count("accuracy")) << "the MeanMetricWrapper reads as compile's accuracy";
  EXPECT_TRUE(std::isfinite(history.history.at("loss").front()));
}

// A tf.keras 2 Functional model: layers with inbound_nodes lists, as Keras 2 wrote them.
TEST(Keras2ModelFile, AFunctionalFileTfKeras2WroteLoads) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  const std::string path = dir.file("functional.h5");
  testing::run_python(dir, R"(
import json, sys, h5py, numpy as np
dense = {"name": "dense", "trainable": True, "dtype": "float32", "units": 2, "activation": "linear",
         "use_bias": True, "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
         "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
         "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None, "bias_constraint": None}
config = {"class_name": "Functional", "config": {"name": "model", "trainable": True, "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 3], "dtype": "float32", "sparse": False,
                                            "ragged": False, "name": "input_1"}, "name": "input_1",
     "inbound_nodes": []},
    {"class_name": "Dense", "config": dense, "name": "dense", "inbound_nodes": [[["input_1", 0, 0, {}]]]}],
    "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}}
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["model_config"] = json.dumps(config).encode("utf8")
    g = f.create_group("model_weights")
    g.attrs["layer_names"] = [b"input_1", b"dense"]
    g.create_group("input_1").attrs["weight_names"] = np.array([], "float64")
    g.create_group("dense").attrs["weight_names"] = [b"dense/kernel:0", b"dense/bias:0"]
    g["dense"].create_dataset("dense/kernel:0", data=np.arange(6, dtype="float32").reshape(3, 2))
    g["dense"].create_dataset("dense/bias:0", data=np.array([1, -1], "float32"))
)",
                      path);
  const std::unique_ptr<Model> model = models::load_model(path);
  EXPECT_EQ(model->class_name(), "Functional");
  EXPECT_EQ(model->name(), "model");
  EXPECT_FALSE(model->compiled());
  // [1, 1, 1] @ [[0, 1], [2, 3], [4, 5]] + [1, -1]
  EXPECT_EQ((*model)(Tensor::from_vector<float>({1, 1, 1}, {1, 3})).to_vector<float>(), (std::vector<float>{7, 8}));
}

TEST(Keras2ModelFile, BadFilesAreErrorsNamingTheFileAndTheFix) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(2)});
  model.build({1, 3});
  model.save_weights(dir.file("weights.h5"));
  std::string m = error_message<ValueError>([&] { models::load_model(dir.file("weights.h5")); });
  EXPECT_TRUE(contains(m, "weights.h5")) << m;
  EXPECT_TRUE(contains(m, "holds weights, not a model")) << m;

  const std::string broken = dir.file("broken.h5");
  testing::run_python(dir, R"(
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["model_config"] = b'{"class_name": "Sequential", "config": '
)",
                      broken);
  m = error_message<ValueError>([&] { models::load_model(broken); });
  EXPECT_TRUE(contains(m, "broken.h5")) << m;
  EXPECT_TRUE(contains(m, "model_config attribute is not valid JSON")) << m;

  const std::string legacy = dir.file("legacy_optimizer.h5");
  const std::string script = kWriteKeras2Sequential + R"(
with h5py.File(sys.argv[1], "a") as f:
    t = json.loads(f.attrs["training_config"])
    t["optimizer_config"]["config"]["is_legacy_optimizer"] = True
    f.attrs["training_config"] = json.dumps(t).encode("utf8")
)";
  testing::run_python(dir, script, legacy);
  m = error_message<ValueError>([&] { models::load_model(legacy); });
  EXPECT_TRUE(contains(m, "legacy_optimizer.h5")) << m;
  EXPECT_TRUE(contains(m, "is_legacy_optimizer")) << m;
  // Loading without compiling reads the model all the same.
  EXPECT_EQ(models::load_model(legacy, {.compile = false})->layers().size(), 3u);
}

TEST(Keras2ModelFile, SaveRefusesAWeightsFileName) {
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(2)});
  model.build({1, 3});
  const std::string m = error_message<ValueError>([&] { model.save(dir.file("m.weights.h5")); });
  EXPECT_TRUE(contains(m, "save_weights")) << m;
}

}  // namespace
}  // namespace kestrel
