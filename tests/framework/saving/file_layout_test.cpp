// The files as other tools see them: read and written by h5py (Debian's python3-h5py).
#include <gtest/gtest.h>

#include "framework/saving/weights_file.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::ChainNet;
using testing::compile_with_state;
using testing::contains;
using testing::Passthrough;
using testing::ScratchDir;
using testing::TestNet;
using testing::TinyDense;

// One line per object: "G <path>", "D <path> <dtype> [<shape>] first=<value>", and for each
// attribute "A <path> <name> <fixed|vlen|dtype> = <value>".
constexpr const char* kDumpScript = R"PY(
import sys, h5py, numpy as np
def kind(dt):
    return {'S': 'fixed', 'O': 'vlen'}.get(dt.kind, str(dt))
def text(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, str): return v
    if isinstance(v, np.ndarray):
        if v.ndim == 0: return text(v[()])
        return '[' + ','.join(text(x) for x in v.tolist()) + ']'
    return str(v)
def attrs(obj):
    for k in sorted(obj.attrs.keys()):
        print('A', obj.name, k, kind(obj.attrs.get_id(k).dtype), '=', text(obj.attrs[k]))
def first(ds):
    if ds.size == 0: return 'none'
    v = np.asarray(ds[()]).reshape(-1)[0]
    if ds.attrs.get('dtype') == 'bfloat16':
        v = np.array([int(v) << 16], dtype=np.uint32).view(np.float32)[0]
    return '%.6g' % float(v)
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        print('D', obj.name, obj.dtype, '[' + ','.join(map(str, obj.shape)) + ']', 'first=' + first(obj))
    else:
        print('G', obj.name)
    attrs(obj)
with h5py.File(sys.argv[1], 'r') as f:
    attrs(f)
    f.visititems(visit)
)PY";

class FileLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
    clear_session();
  }
  std::string dump(const std::string& path) { return testing::run_python(dir_, kDumpScript, path); }
  /// A TestNet with state and recognizable values in tiny_norm (gamma 2, moving_mean -1) and the head.
  void make_net(TestNet& net) {
    net.build({2, 4});
    compile_with_state(net);
    for (const Variable& v : net.weights()) {
      if (v.name() == "tiny_block/tiny_norm/gamma") v.assign(Tensor::full(v.shape(), 2.0));
      if (v.name() == "tiny_block/tiny_norm/moving_mean") v.assign(Tensor::full(v.shape(), -1.0));
    }
    net.head().kernel().assign(Tensor::full({8, 3}, 0.25));
  }
  ScratchDir dir_;
};

TEST_F(FileLayout, Keras3GroupsFollowClassesAndNesting) {
  TestNet net;
  make_net(net);
  net.save_weights(dir_.file("w.weights.h5"));
  const std::string out = dump(dir_.file("w.weights.h5"));
  for (const char* line : {
           "G /vars\n", "D /layers/tiny_block/layers/tiny_dense/vars/0 float32 [4,8]",
           "D /layers/tiny_block/layers/tiny_dense/vars/1 float32 [8]",
           "D /layers/tiny_block/layers/tiny_dense_1/vars/0 float32 [8,8]",
           "D /layers/tiny_block/layers/tiny_norm/vars/0 float32 [8] first=2\n",   // gamma: trainable first
           "D /layers/tiny_block/layers/tiny_norm/vars/1 float32 [8] first=-1\n",  // then moving_mean
           "A /layers/tiny_block/vars name vlen = tiny_block\n",
           "A /layers/tiny_block/layers/tiny_dense_1/vars name vlen = tiny_dense_1\n", "G /layers/passthrough/vars\n",
           "A /layers/tiny_dense/vars name vlen = tiny_dense_2\n",  // the first TinyDense at the top level
           "D /layers/tiny_dense/vars/0 float32 [8,3] first=0.25\n",
           "D /optimizer/vars/0 int64 [] first=2\n",          // iterations
           "D /optimizer/vars/1 float32 [] first=0.1\n",      // learning rate
           "D /optimizer/vars/2 float32 [4,8] first=0.95\n",  // first slot: 0.5, then 0.9 * 0.5 + 0.5
           "D /optimizer/vars/8 float32 [3]",                 // 2 + 7 trainable weights: the head's bias
       }) {
    EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
  }
  EXPECT_FALSE(contains(out, "/optimizer/vars/9")) << out;
  EXPECT_FALSE(contains(out, "G /layers/passthrough/vars/")) << out;
}

TEST_F(FileLayout, Keras2NamesAndPathsMatchTfKeras) {
  TestNet net;
  make_net(net);
  net.save_weights(dir_.file("w.h5"));
  const std::string out = dump(dir_.file("w.h5"));
  for (const char* line : {
           "A / backend fixed = tensorflow\n",
           "A / keras_version fixed = 2.15.0\n",
           "A / layer_names fixed = [tiny_block,passthrough,tiny_dense_2]\n",
           "A /tiny_block weight_names fixed = [tiny_block/tiny_dense/kernel:0,tiny_block/tiny_dense/bias:0,"
           "tiny_block/tiny_dense_1/kernel:0,tiny_block/tiny_dense_1/bias:0,tiny_block/tiny_norm/gamma:0,"
           "tiny_block/tiny_norm/moving_mean:0]\n",
           "A /passthrough weight_names fixed = []\n",
           "D /tiny_block/tiny_block/tiny_norm/gamma:0 float32 [8] first=2\n",
           "D /tiny_dense_2/tiny_dense_2/kernel:0 float32 [8,3] first=0.25\n",
           "D /tiny_dense_2/tiny_dense_2/bias:0 float32 [3]",
           "A /optimizer_weights weight_names fixed = [test_momentum/iteration:0,test_momentum/learning_rate:0,"
           "test_momentum/tiny_block_tiny_dense_kernel_momentum:0,",
           "D /optimizer_weights/test_momentum/iteration:0 int64 [] first=2\n",
       }) {
    EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
  }
}

TEST_F(FileLayout, Bfloat16IsUint16WithADtypeAttribute) {
  ChainNet net(1, [](ChainNet& n, int) -> Layer& { return n.add_layer<TinyDense>(5, DType::bfloat16); });
  net.build({1, 3});
  const Variable kernel = net.weights()[0];
  kernel.assign(Tensor::full({3, 5}, 1.5, DType::bfloat16));
  for (const char* ext : {".weights.h5", ".h5"}) {
    net.save_weights(dir_.file(std::string("bf16") + ext));
    const std::string out = dump(dir_.file(std::string("bf16") + ext));
    const std::string path =
        std::string(ext) == ".h5" ? "/tiny_dense/tiny_dense/kernel:0" : "/layers/tiny_dense/vars/0";
    EXPECT_TRUE(contains(out, "D " + path + " uint16 [3,5] first=1.5\n")) << out;
    EXPECT_TRUE(contains(out, "A " + path + " dtype vlen = bfloat16\n")) << out;
  }
}

TEST_F(FileLayout, LongLayerNameListsAreSplitAsKerasSplitsThem) {
  // 300 names of 240 bytes: 72,000 bytes, past the 64,512-byte limit, so two chunks of 150.
  auto make = [](ChainNet& n, int i) -> Layer& {
    std::string index = std::to_string(1000 + i);
    return n.add_layer<TinyDense>(1, DType::float32, std::string(236, 'x') + index);
  };
  ChainNet saved(300, make);
  saved.build({1, 1});
  saved.save_weights(dir_.file("many.h5"));
  const std::string out = testing::run_python(dir_, R"PY(
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    a = f.attrs
    print('whole', 'layer_names' in a)
    for k in ('layer_names0', 'layer_names1', 'layer_names2'):
        if k in a: print(k, len(a[k]), a[k].nbytes <= 64512, a[k][0].decode()[-4:])
)PY",
                                              dir_.file("many.h5"));
  EXPECT_TRUE(contains(out, "whole False\n")) << out;
  EXPECT_TRUE(contains(out, "layer_names0 150 True 1000\n")) << out;
  EXPECT_TRUE(contains(out, "layer_names1 150 True 1150\n")) << out;
  EXPECT_FALSE(contains(out, "layer_names2")) << out;

  ChainNet loaded(300, make);
  loaded.build({1, 1});
  loaded.load_weights(dir_.file("many.h5"), {.by_name = true});
  testing::expect_same_weights(saved, loaded);
}

// A Keras 2 file as tf.keras writes it, made by h5py: fixed-length names in one layer,
// variable-length in another, float64 values, an empty float array for a weightless layer.
constexpr const char* kKeras2Writer = R"PY(
import sys, h5py, numpy as np
def fill(g, names, fixed):
    if fixed: g.attrs['weight_names'] = np.array([n.encode() for n in names])
    else: g.attrs.create('weight_names', names, dtype=h5py.string_dtype())
for path, under in ((sys.argv[1], None), (sys.argv[2], 'model_weights')):
    with h5py.File(path, 'w') as f:
        if under:
            f.attrs['model_config'] = '{"class_name": "Sequential"}'
        g0 = f.create_group(under) if under else f
        g0.attrs['layer_names'] = np.array([b'dense', b'dropout', b'dense_1'])
        g0.attrs['backend'] = 'tensorflow'
        g0.attrs['keras_version'] = b'2.11.0'
        d = g0.create_group('dense')
        fill(d, ['dense/kernel:0', 'dense/bias:0'], True)
        d['dense/kernel:0'] = np.arange(12, dtype=np.float64).reshape(3, 4) * 0.5
        d['dense/bias:0'] = np.full(4, -1.0, dtype=np.float32)
        g0.create_group('dropout').attrs['weight_names'] = np.asarray([])
        d1 = g0.create_group('dense_1')
        fill(d1, ['dense_1/kernel:0', 'dense_1/bias:0'], False)
        d1['dense_1/kernel:0'] = np.ones((4, 2), dtype=np.float32) * 3
        d1['dense_1/bias:0'] = np.array([7, 8], dtype=np.float32)
)PY";

TEST_F(FileLayout, Keras2FileWrittenByH5pyLoads) {
  testing::run_python(dir_, kKeras2Writer, dir_.file("keras.h5") + " " + dir_.file("full_model.h5"));
  auto make = [](ChainNet& n, int i) -> Layer& {
    if (i == 1) return n.add_layer<Passthrough>("dropout");
    return n.add_layer<TinyDense>(i == 0 ? 4 : 2, DType::float32, i == 0 ? "dense" : "dense_1");
  };
  for (const char* file : {"keras.h5", "full_model.h5"}) {
    for (bool by_name : {false, true}) {
      ChainNet net(3, make);
      net.build({1, 3});
      net.load_weights(dir_.file(file), {.by_name = by_name});
      std::vector<Variable> w = net.weights();
      ASSERT_EQ(w.size(), 4u);
      std::vector<float> kernel = w[0].value().to_vector<float>();
      for (int i = 0; i < 12; ++i) EXPECT_EQ(kernel[static_cast<std::size_t>(i)], 0.5f * static_cast<float>(i));
      EXPECT_EQ(w[1].value().to_vector<float>(), std::vector<float>(4, -1.0f));
      EXPECT_EQ(w[2].value().to_vector<float>(), std::vector<float>(8, 3.0f));
      EXPECT_EQ(w[3].value().to_vector<float>(), (std::vector<float>{7, 8}));
    }
  }
}

}  // namespace
}  // namespace kestrel
