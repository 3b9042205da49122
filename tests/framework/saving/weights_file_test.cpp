#include "framework/saving/weights_file.h"

#include <gtest/gtest.h>

#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::ChainNet;
using testing::compile_with_state;
using testing::contains;
using testing::error_message;
using testing::Passthrough;
using testing::ScratchDir;
using testing::TestMomentum;
using testing::TestNet;
using testing::TinyDense;
using testing::TwinWeights;

class RoundTrip : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { clear_session(); }
  std::string path() const { return dir_.file(std::string("ckpt") + GetParam()); }
  ScratchDir dir_;
};

TEST_P(RoundTrip, WeightsAndOptimizerStateComeBack) {
  TestNet saved;
  saved.build({2, 4});
  compile_with_state(saved);
  saved.save_weights(path());

  TestNet loaded;  // other names (tiny_block_1, ...): both layouts match by order or structure
  loaded.build({2, 4});
  loaded.compile({.optimizer = TestMomentum()});
  ASSERT_FALSE(loaded.optimizer()->built());
  loaded.load_weights(path());

  testing::expect_same_weights(saved, loaded);
  ASSERT_TRUE(loaded.optimizer()->built());  // built on the trainable weights, then assigned
  EXPECT_EQ(loaded.optimizer()->iterations(), 2);
  std::vector<Variable> a = saved.optimizer()->variables();
  std::vector<Variable> b = loaded.optimizer()->variables();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) testing::expect_same_values(a[i], b[i]);

  Tensor x = Tensor::full({2, 4}, 0.3);
  EXPECT_EQ(saved(x).to_vector<float>(), loaded(x).to_vector<float>());
}

TEST_P(RoundTrip, TrainingResumesExactlyWithAdam) {
  Tensor x = Tensor::from_vector<float>({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f}, {2, 4});
  Tensor y = Tensor::from_vector<float>({1, 0, -1, 0.5f, 0.25f, 2}, {2, 3});
  TestNet original;
  original.compile({.optimizer = "adam", .loss = "mse"});
  original.train_on_batch(x, y);
  original.train_on_batch(x, y);
  original.save_weights(path());

  TestNet resumed;
  resumed.build({2, 4});
  resumed.compile({.optimizer = "adam", .loss = "mse"});
  resumed.load_weights(path());
  original.train_on_batch(x, y);
  resumed.train_on_batch(x, y);
  testing::expect_same_weights(original, resumed);
  EXPECT_EQ(resumed.optimizer()->iterations(), 3);
}

TEST_P(RoundTrip, UncompiledModelLoadsWeightsAndIgnoresOptimizerState) {
  TestNet saved;
  saved.build({2, 4});
  compile_with_state(saved);
  saved.save_weights(path());
  TestNet loaded;
  loaded.build({2, 4});
  loaded.load_weights(path());
  testing::expect_same_weights(saved, loaded);
  EXPECT_EQ(loaded.optimizer(), nullptr);
}

TEST_P(RoundTrip, SavingAgainReplacesTheFile) {
  TestNet net;
  net.build({2, 4});
  net.save_weights(path());
  net.head().kernel().assign(Tensor::full(net.head().kernel().shape(), 0.125));
  net.save_weights(path());
  TestNet loaded;
  loaded.build({2, 4});
  loaded.load_weights(path());
  testing::expect_same_weights(net, loaded);
  EXPECT_EQ(dir_.listing(), std::vector<std::string>{std::string("ckpt") + GetParam()});  // no temporary left
}

TEST_P(RoundTrip, Bfloat16WeightsKeepTheirBits) {
  auto make = [](ChainNet& net, int) -> Layer& { return net.add_layer<TinyDense>(5, DType::bfloat16); };
  ChainNet saved(2, make);
  saved.build({1, 3});
  saved.save_weights(path());
  ChainNet loaded(2, make);
  loaded.build({1, 3});
  loaded.load_weights(path());
  ASSERT_EQ(loaded.weights().front().dtype(), DType::bfloat16);
  testing::expect_same_weights(saved, loaded);
}

TEST_P(RoundTrip, WrongShapeNamesLayerWeightAndBothShapes) {
  TestNet saved(8, 3);
  saved.build({2, 4});
  saved.save_weights(path());
  TestNet other(8, 5);  // the head has 5 outputs instead of 3
  other.build({2, 4});
  std::vector<Tensor> before = other.get_weights();
  std::string m = error_message<ShapeError>([&] { other.load_weights(path()); });
  EXPECT_TRUE(contains(m, path())) << m;
  EXPECT_TRUE(contains(m, "'" + other.head().name() + "'")) << m;
  EXPECT_TRUE(contains(m, other.head().kernel().name())) << m;
  EXPECT_TRUE(contains(m, "[8,5]")) << m;
  EXPECT_TRUE(contains(m, "[8,3]")) << m;
  // Nothing was assigned: the block's weights, read before the head failed, are unchanged.
  std::vector<Tensor> after = other.get_weights();
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(after[i].is_same(before[i])) << i;
}

TEST_P(RoundTrip, UnbuiltModelCannotSaveAndTheOldFileSurvives) {
  TestNet built;
  built.build({2, 4});
  built.save_weights(path());
  const std::string original = testing::read_bytes(path());
  TestNet unbuilt;
  std::string m = error_message<ValueError>([&] { unbuilt.save_weights(path()); });
  EXPECT_TRUE(contains(m, "call it on data or build() first")) << m;
  EXPECT_EQ(testing::read_bytes(path()), original);
  EXPECT_TRUE(contains(error_message<ValueError>([&] { unbuilt.load_weights(path()); }), "build() first"));
}

TEST_P(RoundTrip, MissingDirectoryIsAnIOErrorNamingThePath) {
  TestNet net;
  net.build({2, 4});
  const std::string target = dir_.file(std::string("no_such_dir/ckpt") + GetParam());
  std::string m = error_message<IOError>([&] { net.save_weights(target); });
  EXPECT_TRUE(contains(m, target)) << m;
}

TEST_P(RoundTrip, CorruptTruncatedAndMissingFilesAreIOErrors) {
  TestNet net;
  net.build({2, 4});
  testing::write_bytes(path(), "this is not an HDF5 file at all");
  EXPECT_TRUE(contains(error_message<IOError>([&] { net.load_weights(path()); }), path()));

  net.save_weights(path());
  std::string whole = testing::read_bytes(path());
  testing::write_bytes(path(), whole.substr(0, whole.size() / 2));
  std::string m = error_message<IOError>([&] { net.load_weights(path()); });
  EXPECT_TRUE(contains(m, path())) << m;

  const std::string missing = dir_.file(std::string("missing") + GetParam());
  EXPECT_TRUE(contains(error_message<IOError>([&] { net.load_weights(missing); }), missing));
}

TEST_P(RoundTrip, OptimizerWithOtherVariablesIsRefused) {
  TestNet saved;
  saved.build({2, 4});
  compile_with_state(saved);
  saved.save_weights(path());
  clear_session();  // the same layer names, for by_name
  TestNet loaded;
  loaded.build({2, 4});
  loaded.compile({.optimizer = TestMomentum()});
  loaded.optimizer()->build({loaded.trainable_weights().front()});  // slots for one variable only
  std::string m = error_message<ValueError>([&] { loaded.load_weights(path()); });
  EXPECT_TRUE(contains(m, "optimizer 'test_momentum' has 3 variables")) << m;
  EXPECT_EQ(loaded.optimizer()->iterations(), 0);
  loaded.load_weights(path(), {.by_name = std::string(GetParam()) == ".h5", .skip_mismatch = true});
  testing::expect_same_weights(saved, loaded);  // the layers load; the optimizer state is skipped
  EXPECT_EQ(loaded.optimizer()->iterations(), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, RoundTrip, ::testing::Values(".weights.h5", ".h5"),
                         [](const auto& info) { return std::string(info.param) == ".h5" ? "Keras2" : "Keras3"; });

class WeightFiles : public ::testing::Test {
 protected:
  void SetUp() override { clear_session(); }
  ScratchDir dir_;
};

TEST_F(WeightFiles, OtherExtensionsAreRefused) {
  TestNet net;
  net.build({2, 4});
  std::string m = error_message<ValueError>([&] { net.save_weights(dir_.file("ckpt.bin")); });
  EXPECT_TRUE(contains(m, "ckpt.bin")) << m;
  EXPECT_TRUE(contains(m, ".weights.h5")) << m;
  EXPECT_TRUE(contains(m, "\".h5\"")) << m;
  EXPECT_TRUE(dir_.listing().empty());
}

TEST_F(WeightFiles, FailureHalfwayLeavesTheOldFileAndNoTemporary) {
  // Two weights under one name fit the Keras 3 layout (vars/0, vars/1) but not Keras 2's, where
  // the second dataset cannot be created: the save fails after the file was partly written.
  const std::string path = dir_.file("ckpt.h5");
  TestNet good;
  good.build({2, 4});
  good.save_weights(path);
  const std::string original = testing::read_bytes(path);
  ChainNet twins(1, [](ChainNet& net, int) -> Layer& { return net.add_layer<TwinWeights>(); });
  twins.build({1, 2});
  std::string m = error_message<IOError>([&] { twins.save_weights(path); });
  EXPECT_TRUE(contains(m, path)) << m;
  EXPECT_TRUE(contains(m, "/twin_weights/twin_weights/w:0")) << m;
  EXPECT_EQ(testing::read_bytes(path), original);
  EXPECT_EQ(dir_.listing(), std::vector<std::string>{"ckpt.h5"});
}

TEST_F(WeightFiles, Keras3FileMissingALayerNamesIt) {
  auto small = [](ChainNet& net, int) -> Layer& { return net.add_layer<TinyDense>(4); };
  ChainNet saved(2, small);
  saved.build({1, 4});
  saved.save_weights(dir_.file("w.weights.h5"));
  ChainNet bigger(3, small);
  bigger.build({1, 4});
  std::string m = error_message<ValueError>([&] { bigger.load_weights(dir_.file("w.weights.h5")); });
  EXPECT_TRUE(contains(m, "'" + bigger.layers()[2]->name() + "'")) << m;
  EXPECT_TRUE(contains(m, "/layers/tiny_dense_2")) << m;

  bigger.load_weights(dir_.file("w.weights.h5"), {.skip_mismatch = true});
  testing::expect_same_values(saved.weights()[0], bigger.weights()[0]);
  EXPECT_TRUE(
      contains(error_message<ValueError>([&] { bigger.load_weights(dir_.file("w.weights.h5"), {.by_name = true}); }),
               "by_name"));
}

TEST_F(WeightFiles, Keras2LayerCountMismatchNamesTheLayers) {
  auto small = [](ChainNet& net, int) -> Layer& { return net.add_layer<TinyDense>(4); };
  ChainNet saved(2, small);
  saved.build({1, 4});
  saved.save_weights(dir_.file("w.h5"));
  ChainNet bigger(3, small);
  bigger.build({1, 4});
  std::string m = error_message<ValueError>([&] { bigger.load_weights(dir_.file("w.h5")); });
  EXPECT_TRUE(contains(m, "the file has 2 layers with weights")) << m;
  EXPECT_TRUE(contains(m, bigger.layers()[2]->name())) << m;
}

TEST_F(WeightFiles, Keras2ByNameMatchesNamesAndLeavesOthersAlone) {
  auto named = [](std::vector<std::string> names, std::vector<std::int64_t> units) {
    return [names, units](ChainNet& net, int i) -> Layer& {
      return net.add_layer<TinyDense>(units[static_cast<std::size_t>(i)], DType::float32,
                                      names[static_cast<std::size_t>(i)]);
    };
  };
  ChainNet saved(3, named({"encoder", "middle", "decoder"}, {4, 4, 2}));
  saved.build({1, 4});
  saved.save_weights(dir_.file("w.h5"));

  // "extra" is not in the file; "middle" is not in the model; "decoder" changed shape.
  ChainNet other(3, named({"encoder", "extra", "decoder"}, {4, 4, 3}));
  other.build({1, 4});
  std::string m = error_message<ShapeError>([&] { other.load_weights(dir_.file("w.h5"), {.by_name = true}); });
  EXPECT_TRUE(contains(m, "'decoder'")) << m;
  EXPECT_TRUE(contains(m, "[4,3]") && contains(m, "[4,2]")) << m;

  Tensor extra_kernel = other.layers()[1]->weights()[0].value();
  Tensor decoder_kernel = other.layers()[2]->weights()[0].value();
  other.load_weights(dir_.file("w.h5"), {.by_name = true, .skip_mismatch = true});
  testing::expect_same_weights(*saved.layers()[0], *other.layers()[0]);
  EXPECT_TRUE(other.layers()[1]->weights()[0].value().is_same(extra_kernel));
  EXPECT_TRUE(other.layers()[2]->weights()[0].value().is_same(decoder_kernel));

  EXPECT_TRUE(contains(
      error_message<ValueError>([&] { other.load_weights(dir_.file("w.h5"), {.skip_mismatch = true}); }), "by_name"));
}

TEST_F(WeightFiles, ModelWithoutWeightsRoundTrips) {
  ChainNet net(2, [](ChainNet& n, int) -> Layer& { return n.add_layer<Passthrough>(); });
  net.build({1, 2});
  net.save_weights(dir_.file("empty.h5"));
  net.save_weights(dir_.file("empty.weights.h5"));
  net.load_weights(dir_.file("empty.h5"));
  net.load_weights(dir_.file("empty.weights.h5"));
}

}  // namespace
}  // namespace kestrel
