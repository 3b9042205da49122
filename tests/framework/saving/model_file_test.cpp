// model.save("m.keras") and models::load_model: Keras 3's archive, written and read back, checked
// with Python's zipfile, json and h5py, and refused with a clear error when damaged.
#include "framework/saving/model_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/io/zip_archive.h"
#include "framework/layers/input_layer.h"
#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using nlohmann::json;
using testing::contains;
using testing::error_message;
using testing::ScratchDir;

std::unique_ptr<Model> functional_model() {
  const Tensor image = Input({6, 6, 1}, {.name = "image"});
  const Tensor features = layers::Flatten()(layers::Conv2D(2, {3, 3}, {.activation = "relu"})(image));
  return std::make_unique<Model>(image, layers::Dense(3)(features), "cnn");
}

TEST(ModelFile, ASequentialModelComesBackWithItsWeights) {
  clear_session();
  random::set_global_seed(2);
  ScratchDir dir;
  Sequential model({layers::Dense(8, {.activation = "relu"}), layers::Dense(3)});
  model.build({1, 5});
  const std::string path = dir.file("mlp.keras");
  model.save(path);
  const std::unique_ptr<Model> loaded = models::load_model(path);
  EXPECT_EQ(loaded->class_name(), "Sequential");
  testing::expect_same_weights(model, *loaded);
  const Tensor x = random::normal({4, 5}, random::Key(1));
  EXPECT_EQ((*loaded)(x).to_vector<float>(), model(x).to_vector<float>());
}

TEST(ModelFile, AFunctionalModelComesBackWithItsWeights) {
  clear_session();
  ScratchDir dir;
  const std::unique_ptr<Model> model = functional_model();
  const std::string path = dir.file("cnn.keras");
  model->save(path);
  const std::unique_ptr<Model> loaded = models::load_model(path);
  EXPECT_EQ(loaded->class_name(), "Functional");
  EXPECT_EQ(loaded->name(), "cnn");
  testing::expect_same_weights(*model, *loaded);
  const Tensor x = random::normal({2, 6, 6, 1}, random::Key(3));
  EXPECT_EQ((*loaded)(x).to_vector<float>(), (*model)(x).to_vector<float>());
}

// The archive as Keras's own reader sees it: Python's zipfile and json, and h5py for the weights.
TEST(ModelFile, PythonReadsTheArchiveInKerasLayout) {
  if (!testing::have_h5py()) GTEST_SKIP() << "needs /usr/bin/python3 with h5py (python3-h5py)";
  clear_session();
  ScratchDir dir;
  const std::unique_ptr<Model> model = functional_model();
  const std::string path = dir.file("cnn.keras");
  model->save(path);
  const std::string out = testing::run_python(dir, R"(
import io, json, sys, zipfile, h5py
with zipfile.ZipFile(sys.argv[1]) as z:
    print(",".join(z.namelist()))
    meta = json.loads(z.read("metadata.json"))
    print("keras_version" in meta, "date_saved" in meta)
    c = json.loads(z.read("config.json"))
    print(c["module"], c["class_name"], c["registered_name"], sorted(c["config"].keys()))
    print([(l["class_name"], l["name"], len(l["inbound_nodes"])) for l in c["config"]["layers"]])
    print(c["config"]["input_layers"], c["config"]["output_layers"])
    with h5py.File(io.BytesIO(z.read("model.weights.h5")), "r") as f:
        print(sorted(f["layers"].keys()), [f["layers/conv2d/vars/%d" % i].shape for i in range(2)])
)",
                                              path);
  EXPECT_TRUE(contains(out, "metadata.json,config.json,model.weights.h5")) << out;
  EXPECT_TRUE(contains(out, "True True")) << out;
  EXPECT_TRUE(contains(out,
                       "keras.src.models.functional Functional Functional "
                       "['input_layers', 'layers', 'name', 'output_layers', 'trainable']"))
      << out;
  EXPECT_TRUE(contains(out,
                       "[('InputLayer', 'image', 0), ('Conv2D', 'conv2d', 1), ('Flatten', 'flatten', 1), "
                       "('Dense', 'dense', 1)]"))
      << out;
  EXPECT_TRUE(contains(out, "['image', 0, 0] ['dense', 0, 0]")) << out;
  EXPECT_TRUE(contains(out, "['conv2d', 'dense'")) << out;
  EXPECT_TRUE(contains(out, "[(3, 3, 1, 2), (2,)]")) << out;
}

// A compiled model comes back compiled, with its optimizer's state: fit goes on exactly as the
// original's does.
TEST(ModelFile, TrainingContinuesExactly) {
  clear_session();
  random::set_global_seed(4);
  ScratchDir dir;
  const Tensor inputs = Input({5});
  Model model(inputs, layers::Dense(3)(layers::Dense(8, {.activation = "relu"})(inputs)));
  model.compile(
      {.optimizer = optimizers::Adam({.learning_rate = optimizers::schedules::ExponentialDecay(
                                          {.initial_learning_rate = 1e-2, .decay_steps = 5, .decay_rate = 0.5})}),
       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
       .metrics = {"accuracy"}});
  const Tensor x = random::normal({32, 5}, random::Key(8));
  const Tensor y = random::randint({32}, random::Key(9), 0, 3);
  model.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  const std::string path = dir.file("trained.keras");
  model.save(path);

  const std::unique_ptr<Model> loaded = models::load_model(path);
  ASSERT_TRUE(loaded->compiled());
  EXPECT_EQ(loaded->optimizer()->iterations(), 4);
  EXPECT_EQ(loaded->optimizer()->name(), "adam");
  testing::expect_same_optimizer_state(model, *loaded);
  const History more = model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  const History loaded_more = loaded->fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
  EXPECT_EQ(loaded_more.history.at("loss"), more.history.at("loss"));
  EXPECT_EQ(loaded_more.history.at("accuracy"), more.history.at("accuracy"));
  testing::expect_same_weights(model, *loaded);
}

TEST(ModelFile, PythonReadsASequentialModelsConfigInKerasLayout) {
  if (!testing::have_python_module("zipfile")) GTEST_SKIP() << "needs /usr/bin/python3";
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(4, {.activation = "relu"}), layers::Dense(2)});
  model.build({1, 3});
  model.compile({.optimizer = "adam", .loss = "mse", .metrics = {"mae"}});
  const std::string path = dir.file("mlp.keras");
  model.save(path);
  const std::string out = testing::run_python(dir, R"(
import json, sys, zipfile
c = json.loads(zipfile.ZipFile(sys.argv[1]).read("config.json"))
print(sorted(c.keys()))
print(c["module"], c["class_name"], c["registered_name"], c["build_config"])
print(sorted(c["config"].keys()))
print([(l["class_name"], sorted(l.keys())) for l in c["config"]["layers"]])
d = c["config"]["layers"][1]["config"]
print(sorted(d.keys()))
cc = c["compile_config"]
print(sorted(cc.keys()), cc["optimizer"]["class_name"], cc["optimizer"]["config"]["beta_1"], cc["metrics"])
)",
                                              path);
  EXPECT_TRUE(contains(out, "['build_config', 'class_name', 'compile_config', 'config', 'module', 'registered_name']"))
      << out;
  EXPECT_TRUE(contains(out, "keras Sequential None {'input_shape': [None, 3]}")) << out;
  EXPECT_TRUE(contains(out, "['build_input_shape', 'dtype', 'layers', 'name', 'trainable']")) << out;
  EXPECT_TRUE(contains(out,
                       "[('InputLayer', ['class_name', 'config', 'module', 'registered_name']), ('Dense', "
                       "['build_config', 'class_name', 'config', 'module', 'registered_name'])"))
      << out;
  EXPECT_TRUE(contains(out,
                       "['activation', 'bias_constraint', 'bias_initializer', 'bias_regularizer', 'dtype', "
                       "'kernel_constraint', 'kernel_initializer', 'kernel_regularizer', 'name', 'trainable', "
                       "'units', 'use_bias']"))
      << out;
  EXPECT_TRUE(contains(out,
                       "['jit_compile', 'loss', 'loss_weights', 'metrics', 'optimizer', 'run_eagerly', "
                       "'steps_per_execution', 'weighted_metrics'] Adam 0.9 ['mae']"))
      << out;
}

TEST(ModelFile, DamagedOrForeignFilesAreErrorsNamingTheFile) {
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(2)});
  model.build({1, 3});
  const std::string path = dir.file("m.keras");
  model.save(path);
  const std::string bytes = testing::read_bytes(path);

  const std::string truncated = dir.file("truncated.keras");
  testing::write_bytes(truncated, bytes.substr(0, bytes.size() / 2));
  std::string m = error_message<IOError>([&] { models::load_model(truncated); });
  EXPECT_TRUE(contains(m, "truncated.keras")) << m;

  const std::string weights_only = dir.file("weights.keras");
  model.save_weights(dir.file("w.weights.h5"));
  testing::write_bytes(weights_only, testing::read_bytes(dir.file("w.weights.h5")));
  m = error_message<IOError>([&] { models::load_model(weights_only); });
  EXPECT_TRUE(contains(m, "weights.keras")) << m;

  m = error_message<ValueError>([&] { models::load_model(dir.file("m.weights.h5")); });
  EXPECT_TRUE(contains(m, ".keras archive")) << m;
  EXPECT_TRUE(contains(m, "load_weights")) << m;
}

// Rewrites the archive's config.json with `edit` applied.
void edit_config(const std::string& from, const std::string& to, const std::function<void(json&)>& edit) {
  const io::ZipReader in(from);
  json config = json::parse(in.read("config.json"));
  edit(config);
  io::ZipWriter out(to);
  out.add("metadata.json", in.read("metadata.json"));
  out.add("config.json", config.dump());
  out.add("model.weights.h5", in.read("model.weights.h5"));
  out.close();
}

TEST(ModelFile, AConfigNamingAnUnknownClassOrNotFittingTheWeightsIsAnError) {
  clear_session();
  ScratchDir dir;
  Sequential model({layers::Dense(4), layers::Dense(2)});
  model.build({1, 3});
  const std::string path = dir.file("m.keras");
  model.save(path);

  const std::string unknown = dir.file("unknown.keras");
  edit_config(path, unknown, [](json& c) {
    c["config"]["layers"][1]["class_name"] = "Mystery";
    c["config"]["layers"][1]["registered_name"] = "my_package>Mystery";
  });
  std::string m = error_message<ValueError>([&] { models::load_model(unknown); });
  EXPECT_TRUE(contains(m, "unknown.keras")) << m;
  EXPECT_TRUE(contains(m, "'Mystery'")) << m;
  EXPECT_TRUE(contains(m, "KESTREL_REGISTER_SERIALIZABLE")) << m;

  const std::string resized = dir.file("resized.keras");
  edit_config(path, resized, [](json& c) { c["config"]["layers"][2]["config"]["units"] = 5; });
  m = error_message<ShapeError>([&] { models::load_model(resized); });
  // The archive is named, not the scratch file its weights were read from.
  EXPECT_TRUE(contains(m, "'" + resized + " (model.weights.h5)'")) << m;
  EXPECT_FALSE(contains(m, ".tmp-")) << m;
}

}  // namespace
}  // namespace kestrel
