// Functional models of several outputs in their configs: output_layers as Keras 3 writes a list
// or a dict of outputs, compile configs with a loss, weight and metrics per output, and both
// through .keras and .h5 files (checked with Python's zipfile, json and h5py), and read from a
// file in tf.keras 2's layout.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/losses/serialization.h"
#include "framework/model/compile_config.h"
#include "framework/model/functional_graph.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizers.h"
#include "framework/saving/model_file.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using nlohmann::json;
using testing::contains;
using testing::error_message;
using testing::ScratchDir;

// Input "features" -> Dense "trunk" -> two heads: "head_a" classifies into 3 classes, "head_b"
// regresses one value. `named`: the outputs given as {{"label", head_a}, {"score", head_b}}
// instead of the list {head_a, head_b}.
std::unique_ptr<Model> label_and_score_model(bool named) {
  const Tensor x = Input({4}, {.name = "features"});
  const Tensor trunk = layers::Dense(8, {.activation = "relu", .name = "trunk"})(x);
  const Tensor head_a = layers::Dense(3, {.name = "head_a"})(trunk);
  const Tensor head_b = layers::Dense(1, {.name = "head_b"})(trunk);
  if (named) return std::make_unique<Model>(x, Outputs{{"label", head_a}, {"score", head_b}}, "two_headed");
  return std::make_unique<Model>(x, std::vector<Tensor>{head_a, head_b}, "two_headed");
}

// The model's two output names: the heads' layer names for a list, the keys for a dict.
std::vector<std::string> names_of(bool named) {
  return named ? std::vector<std::string>{"label", "score"} : std::vector<std::string>{"head_a", "head_b"};
}

struct TwoHeadData {
  Tensor x;
  Outputs y;
};

TwoHeadData two_head_data(bool named, std::uint64_t seed) {
  const std::vector<std::string> names = names_of(named);
  return {random::normal({24, 4}, random::Key(seed)),
          Outputs{{names[0], random::randint({24}, random::Key(seed + 1), 0, 3)},
                  {names[1], random::normal({24, 1}, random::Key(seed + 2))}}};
}

// A loss per output (one object, one name), the second weighed at half, a metric on each.
CompileOptions per_output_options(bool named) {
  const std::vector<std::string> names = names_of(named);
  // A learning rate a float32 holds exactly, so that the configs' JSON shows it as written.
  return {.optimizer = optimizers::Adam({.learning_rate = 0.0078125}),
          .loss = {{names[0], losses::SparseCategoricalCrossentropy({.from_logits = true})}, {names[1], "mse"}},
          .loss_weights = {{names[1], 0.5}},
          .metrics = {{names[0], {"accuracy"}}},
          .weighted_metrics = {{names[1], {"mae"}}}};
}

FitOptions quiet(int epochs) { return {.batch_size = 8, .epochs = epochs, .verbose = 0, .shuffle = false}; }

void expect_same_predictions(Model& a, Model& b, const Tensor& x, const std::vector<std::string>& names) {
  const Outputs from_a = a.predict(x);
  const Outputs from_b = b.predict(x);
  ASSERT_TRUE(from_a.is_named());
  ASSERT_TRUE(from_b.is_named());
  EXPECT_EQ(from_b.named().size(), names.size());
  for (const std::string& name : names) {
    EXPECT_EQ(from_b[name].to_vector<float>(), from_a[name].to_vector<float>()) << name;
  }
}

TEST(MultiOutputConfig, ListOutputsAreWrittenAsAListAndReadBackAsOne) {
  clear_session();
  const std::unique_ptr<Model> model = label_and_score_model(/*named=*/false);
  const json config = model->get_config();
  EXPECT_EQ(config.at("output_layers"), json::parse(R"([["head_a", 0, 0], ["head_b", 0, 0]])"));
  EXPECT_EQ(config.at("input_layers"), json::parse(R"(["features", 0, 0])"));

  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->output_names(), (std::vector<std::string>{"head_a", "head_b"}));
  EXPECT_EQ(copy->functional_graph()->output_form(), FunctionalGraph::Form::list);
  EXPECT_EQ(copy->get_config(), config);
  copy->set_weights(model->get_weights());
  expect_same_predictions(*model, *copy, random::normal({5, 4}, random::Key(1)), names_of(false));
}

TEST(MultiOutputConfig, NamedOutputsAreWrittenAsADictAndReadBackAsOne) {
  clear_session();
  const std::unique_ptr<Model> model = label_and_score_model(/*named=*/true);
  const json config = model->get_config();
  EXPECT_EQ(config.at("output_layers"), json::parse(R"({"label": ["head_a", 0, 0], "score": ["head_b", 0, 0]})"));

  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_EQ(copy->output_names(), (std::vector<std::string>{"label", "score"}));
  EXPECT_EQ(copy->functional_graph()->output_form(), FunctionalGraph::Form::named);
  EXPECT_EQ(copy->get_config(), config);
  copy->set_weights(model->get_weights());
  expect_same_predictions(*model, *copy, random::normal({5, 4}, random::Key(2)), names_of(true));
}

TEST(MultiOutputConfig, OneOutputStaysOneReferenceAndKeras2sListOfOneReadsAsOne) {
  clear_session();
  const Tensor x = Input({4});
  Model model(x, layers::Dense(2)(x));
  json config = model.get_config();
  EXPECT_EQ(config.at("output_layers"), json::parse(R"(["dense", 0, 0])"));
  // Keras 2 wrote a single input and output each as a list of one.
  config["input_layers"] = json::array({config.at("input_layers")});
  config["output_layers"] = json::parse(R"([["dense", 0, 0]])");
  const std::unique_ptr<Model> copy = Model::from_config(config);
  EXPECT_TRUE(copy->output_names().empty());
  EXPECT_EQ(copy->functional_graph()->output_form(), FunctionalGraph::Form::one);
  EXPECT_EQ(copy->get_config().at("output_layers"), json::parse(R"(["dense", 0, 0])"));
  copy->set_weights(model.get_weights());
  const Tensor data = random::normal({3, 4}, random::Key(3));
  EXPECT_EQ(copy->predict(data).tensor().to_vector<float>(), model.predict(data).tensor().to_vector<float>());
}

TEST(MultiOutputConfig, OutputLayersNamingALayerTheConfigLacksIsAnErrorNamingIt) {
  clear_session();
  json config = label_and_score_model(/*named=*/false)->get_config();
  config["output_layers"][1] = json::parse(R"(["ghost_head", 0, 0])");
  std::string m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, "output_layers name layer 'ghost_head', which the config does not hold")) << m;
  EXPECT_TRUE(contains(m, "'features', 'trunk', 'head_a', 'head_b'")) << m;

  // A call the layer does not have: the node index is out of range.
  config["output_layers"] = json::parse(R"({"label": ["head_a", 0, 0], "score": ["head_b", 2, 0]})");
  m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, R"(output_layers name ["head_b",2,0], but the calls of layer 'head_b' in the config )"
                          "are nodes 0 to 0"))
      << m;

  config["output_layers"] = json::parse(R"({"label": "head_a"})");
  m = error_message<ValueError>([&] { Model::from_config(config); });
  EXPECT_TRUE(contains(m, "output_layers hold \"head_a\"")) << m;
  EXPECT_TRUE(contains(m, "[layer, node index, tensor index]")) << m;
}

TEST(MultiOutputConfig, CompileConfigWritesEachOutputsLossWeightAndMetricsByName) {
  clear_session();
  const std::unique_ptr<Model> model = label_and_score_model(/*named=*/false);
  model->compile(per_output_options(/*named=*/false));
  const json config = compile_config(*model);
  EXPECT_EQ(config.at("loss").size(), 2U);
  EXPECT_EQ(config.at("loss").at("head_a"),
            losses::serialize(losses::SparseCategoricalCrossentropy({.from_logits = true})));
  EXPECT_EQ(config.at("loss").at("head_b").at("class_name"), "MeanSquaredError");
  // Keras 3 reads loss weights by every output's name: the ones not given weigh 1.
  EXPECT_EQ(config.at("loss_weights"), json::parse(R"({"head_a": 1.0, "head_b": 0.5})"));
  EXPECT_EQ(config.at("metrics"), json::parse(R"({"head_a": ["accuracy"]})"));
  EXPECT_EQ(config.at("weighted_metrics"), json::parse(R"({"head_b": ["mae"]})"));

  const CompileOptions options = compile_options_from_config(config, model->output_names(), "test");
  ASSERT_TRUE(options.loss.by_output());
  ASSERT_EQ(options.loss.per_output().size(), 2U);
  EXPECT_EQ(options.loss.per_output().at("head_a")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(options.loss.per_output().at("head_b")->name(), "mean_squared_error");
  EXPECT_EQ(options.loss_weights, (std::map<std::string, double>{{"head_a", 1.0}, {"head_b", 0.5}}));
  ASSERT_TRUE(options.metrics.by_output());
  ASSERT_EQ(options.metrics.per_output().at("head_a").size(), 1U);
  EXPECT_EQ(options.metrics.per_output().at("head_a")[0].name(), "accuracy");
  ASSERT_TRUE(options.weighted_metrics.by_output());
  EXPECT_EQ(options.weighted_metrics.per_output().at("head_b")[0].name(), "mae");

  // Compiled from the config, a copy writes the same config.
  const std::unique_ptr<Model> copy = Model::from_config(model->get_config());
  copy->compile(options);
  EXPECT_EQ(compile_config(*copy), config);
}

TEST(MultiOutputConfig, CompileConfigReadsKerasListsInOutputOrder) {
  clear_session();
  const std::unique_ptr<Model> model = label_and_score_model(/*named=*/true);
  model->compile(per_output_options(/*named=*/true));
  json config = compile_config(*model);
  config["loss"] = json::array({config.at("loss").at("label"), "mse"});
  config["loss_weights"] = json::parse("[1.0, 0.25]");
  config["metrics"] = json::parse(R"([["accuracy"], null])");
  config["weighted_metrics"] = json::parse(R"([[], "mae"])");
  const CompileOptions options = compile_options_from_config(config, model->output_names(), "test");
  EXPECT_EQ(options.loss.per_output().at("label")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(options.loss.per_output().at("score")->name(), "mean_squared_error");
  EXPECT_EQ(options.loss_weights, (std::map<std::string, double>{{"label", 1.0}, {"score", 0.25}}));
  EXPECT_EQ(options.metrics.per_output().size(), 1U);
  EXPECT_EQ(options.metrics.per_output().at("label")[0].name(), "accuracy");
  EXPECT_EQ(options.weighted_metrics.per_output().size(), 1U);
  EXPECT_EQ(options.weighted_metrics.per_output().at("score")[0].name(), "mae");

  config["loss"] = json::array({"mse", "mse", "mse"});
  const std::string m = error_message<ValueError>([&] {
    compile_options_from_config(config, {"label", "score"}, "f");
  });
  EXPECT_TRUE(contains(m, "f, compile_config: loss is a list of 3 for a model of 2 outputs ('label', 'score')")) << m;
}

TEST(MultiOutputConfig, OneOutputsCompileConfigIsAsKerasWritesIt) {
  clear_session();
  const Tensor x = Input({4});
  Model model(x, layers::Dense(3)(x));
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.0078125}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  const json config = compile_config(model);
  EXPECT_EQ(config.at("loss"), losses::serialize(losses::SparseCategoricalCrossentropy({.from_logits = true})));
  EXPECT_TRUE(config.at("loss_weights").is_null());
  EXPECT_EQ(config.at("metrics"), json::parse(R"(["accuracy"])"));
  EXPECT_TRUE(config.at("weighted_metrics").is_null());
  const CompileOptions options = compile_options_from_config(config, {}, "test");
  EXPECT_FALSE(options.loss.by_output());
  EXPECT_EQ(options.loss.all()->name(), "sparse_categorical_crossentropy");
  EXPECT_TRUE(options.loss_weights.empty());
  ASSERT_EQ(options.metrics.all().size(), 1U);
  EXPECT_EQ(options.metrics.all()[0].name(), "accuracy");

  json weighted = config;
  weighted["loss_weights"] = 0.5;
  const std::string m = error_message<ValueError>([&] { compile_options_from_config(weighted, {}, "f"); });
  EXPECT_TRUE(contains(m, "loss_weights is 0.5 for a model of one output")) << m;
}

// Saved after a fit and loaded back, a compiled two-output model predicts the same, bit for bit,
// has the same compile options and optimizer state, and trains on exactly as the original does.
void expect_file_round_trip(bool named, const std::string& file_name) {
  clear_session();
  random::set_global_seed(5);
  ScratchDir dir;
  const std::unique_ptr<Model> model = label_and_score_model(named);
  model->compile(per_output_options(named));
  const TwoHeadData data = two_head_data(named, 10);
  model->fit(data.x, data.y, quiet(1));
  const std::string path = dir.file(file_name);
  model->save(path);

  const std::unique_ptr<Model> loaded = models::load_model(path);
  EXPECT_EQ(loaded->name(), "two_headed");
  EXPECT_EQ(loaded->output_names(), names_of(named));
  EXPECT_EQ(loaded->functional_graph()->output_form(),
            named ? FunctionalGraph::Form::named : FunctionalGraph::Form::list);
  testing::expect_same_weights(*model, *loaded);
  expect_same_predictions(*model, *loaded, data.x, names_of(named));
  ASSERT_TRUE(loaded->compiled());
  EXPECT_EQ(compile_config(*loaded), compile_config(*model));
  EXPECT_EQ(loaded->compile_options().loss_weights,
            (std::map<std::string, double>{{names_of(named)[0], 1.0}, {names_of(named)[1], 0.5}}));
  EXPECT_EQ(loaded->optimizer()->iterations(), 3);
  testing::expect_same_optimizer_state(*model, *loaded);

  const History more = model->fit(data.x, data.y, quiet(1));
  const History loaded_more = loaded->fit(data.x, data.y, quiet(1));
  EXPECT_EQ(loaded_more.history, more.history);
  const std::string first = names_of(named)[0];
  EXPECT_TRUE(loaded_more.history.count(first + "_accuracy")) << first;
  testing::expect_same_weights(*model, *loaded);
}

TEST(MultiOutputConfig, ListOutputsRoundTripThroughAKerasArchive) { expect_file_round_trip(false, "heads.keras"); }
TEST(MultiOutputConfig, NamedOutputsRoundTripThroughAKerasArchive) { expect_file_round_trip(true, "heads.keras"); }
TEST(MultiOutputConfig, ListOutputsRoundTripThroughAKeras2File) { expect_file_round_trip(false, "heads.h5"); }
TEST(MultiOutputConfig, NamedOutputsRoundTripThroughAKeras2File) { expect_file_round_trip(true, "heads.h5"); }

// The files as Keras's own readers see them: zipfile and json for the archive, h5py for the .h5.
TEST(MultiOutputConfig, PythonReadsThePerOutputConfigsInKerasLayout) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  const std::unique_ptr<Model> model = label_and_score_model(/*named=*/true);
  model->compile(per_output_options(/*named=*/true));
  model->save(dir.file("heads.keras"));
  model->save(dir.file("heads.h5"));
  const std::string out = testing::run_python(dir, R"(
import json, sys, zipfile, h5py
c = json.loads(zipfile.ZipFile(sys.argv[1]).read("config.json"))
cc = c["compile_config"]
print("keras", c["config"]["output_layers"], sorted(cc["loss"].keys()), cc["loss"]["label"]["class_name"],
      cc["loss_weights"], cc["metrics"], cc["weighted_metrics"])
with h5py.File(sys.argv[2], "r") as f:
    m = json.loads(f.attrs["model_config"])
    t = json.loads(f.attrs["training_config"])
    print("h5", m["config"]["output_layers"], sorted(t["loss"].keys()), sorted(t["loss"]["label"].keys()),
          t["loss"]["score"]["class_name"], t["loss_weights"], t["metrics"], t["weighted_metrics"])
)",
                                              dir.file("heads.keras") + " " + dir.file("heads.h5"));
  EXPECT_TRUE(
      contains(out,
               "keras {'label': ['head_a', 0, 0], 'score': ['head_b', 0, 0]} ['label', 'score'] "
               "SparseCategoricalCrossentropy {'label': 1.0, 'score': 0.5} {'label': ['accuracy']} {'score': ['mae']}"))
      << out;
  EXPECT_TRUE(contains(out,
                       "h5 {'label': ['head_a', 0, 0], 'score': ['head_b', 0, 0]} ['label', 'score'] "
                       "['class_name', 'config'] MeanSquaredError {'label': 1.0, 'score': 0.5} {'label': ['accuracy']} "
                       "{'score': ['mae']}"))
      << out;
}

// A two-output Functional model as tf.keras 2.15 writes it (h5py following its saving code):
// output_layers a list of two, losses by output name, loss weights and metrics (each a
// MeanMetricWrapper) as lists in output order. Prints the heads' outputs for one row, computed
// by NumPy from the stored weights.
const std::string kWriteKeras2TwoHeads = std::string(testing::kKeras2FileWriters) + R"(
def node(name, inbound):
    layer = dense(name, units[name], "relu" if name == "trunk" else "linear")
    layer.update({"name": name, "inbound_nodes": [[[inbound, 0, 0, {}]]]})
    return layer
units = {"trunk": 4, "head_a": 3, "head_b": 1}
trunk, head_a, head_b = node("trunk", "input_1"), node("head_a", "trunk"), node("head_b", "trunk")
config = {"class_name": "Functional", "config": {"name": "model", "trainable": True, "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 3], "dtype": "float32", "sparse": False,
                                            "ragged": False, "name": "input_1"}, "name": "input_1",
     "inbound_nodes": []}, trunk, head_a, head_b],
    "input_layers": [["input_1", 0, 0]], "output_layers": [["head_a", 0, 0], ["head_b", 0, 0]]}}
wrapper = lambda name, fn: {"class_name": "MeanMetricWrapper", "config": {"name": name, "dtype": "float32", "fn": fn}}
training_config = {
    "loss": {"head_a": {"class_name": "SparseCategoricalCrossentropy",
                        "config": {"reduction": "auto", "name": "sparse_categorical_crossentropy",
                                   "from_logits": True, "ignore_class": None}},
             "head_b": "mse"},
    "metrics": [[wrapper("accuracy", "sparse_categorical_accuracy")], [wrapper("mae", "mean_absolute_error")]],
    "weighted_metrics": None, "loss_weights": [1.0, 0.5], "optimizer_config": adam_config}
k1 = (np.arange(12, dtype="float32").reshape(3, 4) - 5) / 10; b1 = np.array([0.1, -0.2, 0.3, 0.0], "float32")
ka = (np.arange(12, dtype="float32").reshape(4, 3) - 6) / 7; ba = np.array([0.05, -0.05, 0.0], "float32")
kb = (np.arange(4, dtype="float32").reshape(4, 1) - 2) / 3; bb = np.array([0.25], "float32")
weights = {"trunk": [("kernel", k1), ("bias", b1)], "head_a": [("kernel", ka), ("bias", ba)],
           "head_b": [("kernel", kb), ("bias", bb)]}
with h5py.File(sys.argv[1], "w") as f:
    write_keras2_file(f, config, training_config, ["input_1", "trunk", "head_a", "head_b"], weights)
x = np.array([[0.5, -1.0, 2.0]], "float32")
h = np.maximum(x @ k1 + b1, 0)
print(" ".join("%.6f" % v for v in np.concatenate([(h @ ka + ba).ravel(), (h @ kb + bb).ravel()])))
)";

TEST(MultiOutputConfig, AFileTfKeras2WroteWithTwoOutputsLoadsCompiledPerOutput) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  const std::string path = dir.file("tf_keras_heads.h5");
  const std::vector<double> expected =
      testing::printed_numbers("values " + testing::run_python(dir, kWriteKeras2TwoHeads, path), "values");
  ASSERT_EQ(expected.size(), 4U);

  const std::unique_ptr<Model> model = models::load_model(path);
  EXPECT_EQ(model->output_names(), (std::vector<std::string>{"head_a", "head_b"}));
  const Outputs predicted = model->predict(Tensor::from_vector<float>({0.5f, -1, 2}, {1, 3}));
  const std::vector<float> head_a = predicted["head_a"].to_vector<float>();
  const std::vector<float> head_b = predicted["head_b"].to_vector<float>();
  ASSERT_EQ(head_a.size(), 3U);
  ASSERT_EQ(head_b.size(), 1U);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(head_a[i], expected[i], 1e-5) << i;
  EXPECT_NEAR(head_b[0], expected[3], 1e-5);

  ASSERT_TRUE(model->compiled());
  const CompileOptions& options = model->compile_options();
  ASSERT_TRUE(options.loss.by_output());
  EXPECT_EQ(options.loss.per_output().at("head_a")->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(options.loss.per_output().at("head_b")->name(), "mean_squared_error");
  EXPECT_EQ(options.loss_weights, (std::map<std::string, double>{{"head_a", 1.0}, {"head_b", 0.5}}));
  ASSERT_TRUE(options.metrics.by_output());
  EXPECT_EQ(options.metrics.per_output().at("head_a")[0].name(), "accuracy");
  EXPECT_EQ(options.metrics.per_output().at("head_b")[0].name(), "mean_absolute_error");
  const Logs logs = model->evaluate(Tensor::from_vector<float>({0.5f, -1, 2, 1, 0, -0.5f}, {2, 3}),
                                    Outputs{{"head_a", Tensor::from_vector<std::int32_t>({0, 2}, {2})},
                                            {"head_b", Tensor::from_vector<float>({0.5f, -0.5f}, {2, 1})}},
                                    {.verbose = 0});
  EXPECT_TRUE(logs.count("head_a_accuracy")) << "the MeanMetricWrapper reads as compile's accuracy";
  EXPECT_TRUE(logs.count("head_b_mean_absolute_error"));
  // Each output's loss is logged unweighted, and the total weighs them (as in Keras 3).
  EXPECT_NEAR(logs.at("loss"), logs.at("head_a_loss") + 0.5 * logs.at("head_b_loss"), 1e-5);
}

}  // namespace
}  // namespace kestrel
