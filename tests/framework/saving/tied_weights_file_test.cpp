// A weight tied between layers is one variable in a weights file: stored once, under the first
// layer that holds it, and one variable again after loading. Both layouts, read by h5py too.
#include <gtest/gtest.h>

#include "framework/layers/weight_ties.h"
#include "tests/framework/layers/tied_model_util.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::TiedPair;

constexpr const char* kListDatasets = R"PY(
import sys, h5py
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        print('D', obj.name, '[' + ','.join(map(str, obj.shape)) + ']')
    elif 'weight_names' in obj.attrs:
        print('A', obj.name, [n.decode() for n in obj.attrs['weight_names']])
with h5py.File(sys.argv[1], 'r') as f:
    f.visititems(visit)
)PY";

class TiedWeightsFile : public ::testing::Test {
 protected:
  void SetUp() override { clear_session(); }
  testing::ScratchDir dir_;
  Tensor x_ = Tensor::from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f, 1.0f, 0.0f, -0.5f, 3.0f}, {2, 4});
};

TEST_F(TiedWeightsFile, StoredOnceAndTiedAgainAfterLoading) {
  TiedPair trained;
  trained(x_);
  trained.compile({.optimizer = testing::TestMomentum(), .loss = "mse"});
  trained.train_on_batch(x_, Tensor::zeros({2, 4}));
  const Tensor expected = trained(x_);

  for (const std::string name : {"tied.weights.h5", "tied.h5"}) {
    SCOPED_TRACE(name);
    const std::string path = dir_.file(name);
    trained.save_weights(path);
    clear_session();
    TiedPair restored;
    restored(x_);
    restored.compile({.optimizer = testing::TestMomentum(), .loss = "mse"});
    restored.load_weights(path);
    EXPECT_TRUE(restored.tied());
    EXPECT_EQ(restored(x_).to_vector<float>(), expected.to_vector<float>());
    testing::expect_same_values(restored.encoder().kernel(), trained.encoder().kernel());
    // Optimizer state reloads too: one momentum slot per variable, the tied kernel's once.
    ASSERT_EQ(restored.optimizer()->variables().size(), 2u + 3u);
    for (std::size_t i = 0; i < 5; ++i) {
      testing::expect_same_values(restored.optimizer()->variables()[i], trained.optimizer()->variables()[i]);
    }
  }
}

TEST_F(TiedWeightsFile, OtherReadersSeeOneDatasetForTheTie) {
  if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
  TiedPair model;
  model(x_);
  model.save_weights(dir_.file("tied.weights.h5"));
  std::string out = testing::run_python(dir_, kListDatasets, dir_.file("tied.weights.h5"));
  EXPECT_TRUE(contains(out, "D /layers/projection/vars/0 [4,4]")) << out;  // encoder: kernel, bias
  EXPECT_TRUE(contains(out, "D /layers/projection/vars/1 [4]")) << out;
  EXPECT_TRUE(contains(out, "D /layers/projection_1/vars/0 [4]")) << out;  // decoder: its bias alone
  EXPECT_FALSE(contains(out, "D /layers/projection_1/vars/1")) << out;

  model.save_weights(dir_.file("tied.h5"));
  out = testing::run_python(dir_, kListDatasets, dir_.file("tied.h5"));
  EXPECT_TRUE(contains(out, "A /encoder ['encoder/kernel:0', 'encoder/bias:0']")) << out;
  EXPECT_TRUE(contains(out, "A /decoder ['decoder/bias:0']")) << out;
}

}  // namespace
}  // namespace kestrel
