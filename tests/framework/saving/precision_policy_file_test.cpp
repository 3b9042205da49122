// Checkpoints across precision policies, in both layouts: a float32 checkpoint loads into a
// bfloat16-policy model and back, optimizer slots keep their own dtype, each conversion is logged,
// and h5py reads the bfloat16 file as Keras writes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "framework/layers/layers.h"
#include "framework/losses/losses.h"
#include "framework/model/sequential.h"
#include "framework/optimizers/optimizers.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"
#include "tests/support/log_capture.h"

namespace kestrel {
namespace {

using mixed_precision::PolicyScope;
using testing::contains;
using testing::LogCapture;
using testing::ScratchDir;

// An MLP under `policy` (seed 3), built and compiled with Adam, after one training step, so the
// file holds optimizer slots too.
std::unique_ptr<Sequential> trained_mlp(const char* policy) {
  const PolicyScope scoped(policy);
  clear_session();
  random::set_global_seed(3);
  auto model = std::make_unique<Sequential>(
      std::initializer_list<LayerArg>{layers::Dense(6, {.activation = "relu"}), layers::Dense(2)});
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  const Tensor x = random::normal({8, 5}, random::Key(4));
  const Tensor y = random::randint({8}, random::Key(5), 0, 2);
  model->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  return model;
}

std::vector<float> values_of(const Variable& v) { return ops::cast(v.value(), DType::float32).to_vector<float>(); }
std::vector<float> rounded_to_bfloat16(const Variable& v) {
  return ops::cast(ops::cast(v.value(), DType::bfloat16), DType::float32).to_vector<float>();
}

class PolicyFiles : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path() const { return dir_.file(std::string("ckpt") + GetParam()); }
  ScratchDir dir_;
};

TEST_P(PolicyFiles, Float32CheckpointLoadsIntoABfloat16ModelAndBack) {
  const auto f32 = trained_mlp("float32");
  f32->save_weights(path());

  const auto bf16 = trained_mlp("bfloat16");
  {
    LogCapture log("kestrel.saving");
    bf16->load_weights(path());
    EXPECT_TRUE(contains(log.text(), "stored as float32 to the model's bfloat16")) << log.text();
  }
  const std::vector<Variable> want = f32->weights(), got = bf16->weights();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), DType::bfloat16) << got[i].name();
    EXPECT_EQ(values_of(got[i]), rounded_to_bfloat16(want[i])) << got[i].name();  // nearest even
  }
  // The optimizer's slots keep the bfloat16 of the variables they belong to.
  for (const Variable& slot : bf16->optimizer()->variables()) {
    if (slot.shape().rank() > 0) {
      EXPECT_EQ(slot.dtype(), DType::bfloat16) << slot.name();
    }
  }

  // And back: the bfloat16 values load exactly into a float32 model.
  const std::string back = dir_.file(std::string("back") + GetParam());
  bf16->save_weights(back);
  const auto reloaded = trained_mlp("float32");
  {
    LogCapture log("kestrel.saving");
    reloaded->load_weights(back);
    EXPECT_TRUE(contains(log.text(), "stored as bfloat16 to the model's float32")) << log.text();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(reloaded->weights()[i].dtype(), DType::float32);
    EXPECT_EQ(values_of(reloaded->weights()[i]), values_of(got[i])) << got[i].name();
  }
}

TEST_P(PolicyFiles, MixedModelsSaveFloat32AndLoadWithoutConversion) {
  const auto mixed = trained_mlp("mixed_bfloat16");
  mixed->save_weights(path());
  const auto f32 = trained_mlp("float32");
  LogCapture log("kestrel.saving");
  f32->load_weights(path());
  EXPECT_FALSE(contains(log.text(), "converted")) << log.text();
  for (std::size_t i = 0; i < f32->weights().size(); ++i) {
    EXPECT_EQ(values_of(f32->weights()[i]), values_of(mixed->weights()[i]));
  }
}

// h5py sees a bfloat16 model's weights as Keras 3 stores them: uint16 bit patterns with
// attribute dtype="bfloat16", whose float32 widening is the model's value.
TEST_P(PolicyFiles, H5pyReadsTheBfloat16Weights) {
  if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
  const auto bf16 = trained_mlp("bfloat16");
  bf16->save_weights(path());
  constexpr const char* kScript = R"PY(
import sys, h5py, numpy as np
def show(name, obj):
    if 'optimizer' in name: return
    if isinstance(obj, h5py.Dataset) and obj.ndim == 2 and obj.attrs.get('dtype') == 'bfloat16':
        wide = (np.asarray(obj[()], dtype=np.uint32) << 16).view(np.float32)
        print(obj.dtype, '%.9g' % wide.reshape(-1)[0])
with h5py.File(sys.argv[1], 'r') as f:
    f.visititems(show)
)PY";
  const std::string out = testing::run_python(dir_, kScript, path());
  // The first kernel element of each Dense, as h5py widens it.
  std::string want;
  for (const Variable& v : bf16->weights()) {
    if (v.shape().rank() != 2) continue;
    char line[64];
    std::snprintf(line, sizeof line, "uint16 %.9g\n", static_cast<double>(values_of(v)[0]));
    want += line;
  }
  EXPECT_EQ(out, want);
}

INSTANTIATE_TEST_SUITE_P(Layouts, PolicyFiles, ::testing::Values(".weights.h5", ".h5"),
                         [](const auto& info) { return std::string(info.param) == ".h5" ? "Keras2" : "Keras3"; });

}  // namespace
}  // namespace kestrel
