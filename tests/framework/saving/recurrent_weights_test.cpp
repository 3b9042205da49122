// LSTM and GRU weights in the files Keras writes: Keras 3 keeps them in the layer's cell
// (/layers/lstm/cell/vars/0..2), Keras 2 names them after the cell ("lstm/lstm_cell/kernel:0").
// Files written by h5py in Keras's layouts load with their exact values and give Keras's outputs,
// and Kestrel's own files show the same layout to h5py.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "framework/layers/gru.h"
#include "framework/layers/lstm.h"
#include "framework/model/sequential.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::ScratchDir;

constexpr std::int64_t kBatch = 2, kSteps = 5, kFeatures = 3, kUnits = 4;

// The values the Python scripts write, multiples of 1/16, 1/32 and 1/64 so that float32 holds them
// exactly; the same formulas here give the values the loaded variables must hold.
constexpr const char* kRecurrentValuesPy = R"PY(
import sys, h5py, numpy as np
F, U, T, N = 3, 4, 5, 2
def kernel(shape): return ((np.arange(np.prod(shape)) % 13 - 6) / 16).reshape(shape).astype(np.float32)
def recurrent(shape): return ((np.arange(np.prod(shape)) % 7 - 3) / 32).reshape(shape).astype(np.float32)
def bias(shape): return (np.arange(np.prod(shape)) / 64 - 0.25).reshape(shape).astype(np.float32)
x = ((np.arange(N * T * F) % 9 - 4) / 8).reshape(N, T, F)
def sigmoid(z): return 1 / (1 + np.exp(-z))
# Keras's LSTMCell.call (implementation 2): gates i, f, c, o.
def lstm(k, r, b):
    h = np.zeros((N, U)); c = np.zeros((N, U))
    for t in range(T):
        i, f, g, o = np.split(x[:, t] @ k + h @ r + b, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    return h
# Keras's GRUCell.call with reset_after: bias row 0 for the inputs, row 1 for the recurrent part.
def gru(k, r, b):
    h = np.zeros((N, U))
    for t in range(T):
        x_z, x_r, x_h = np.split(x[:, t] @ k + b[0], 3, axis=1)
        r_z, r_r, r_h = np.split(h @ r + b[1], 3, axis=1)
        z = sigmoid(x_z + r_z); reset = sigmoid(x_r + r_r)
        hh = np.tanh(x_h + reset * r_h)
        h = z * h + (1 - z) * hh
    return h
lstm_weights = (kernel((F, 4 * U)), recurrent((U, 4 * U)), bias((4 * U,)))
gru_weights = (kernel((F, 3 * U)), recurrent((U, 3 * U)), bias((2, 3 * U)))
def show(label, h): print(label, ' '.join('%.9g' % v for v in h.reshape(-1)))
)PY";

// Keras 3's saving_lib for Sequential([LSTM]) and Sequential([GRU]): H5IOStore.make(path, {"name":
// ...}) makes <path>/vars with the name on it, for the model (""), for the layer under
// layers/<snake_case class> (an LSTM holds no weights of its own: an empty vars) and for the cell
// under the layer's attribute "cell", whose save_own_variables stores "0", "1", "2".
constexpr const char* kRecurrentKeras3Writer = R"PY(
def write(path, layer, cell, weights):
    with h5py.File(path, 'w') as f:
        f.create_group('vars').attrs['name'] = 'sequential'
        f.create_group('layers/' + layer + '/vars').attrs['name'] = layer
        vars = f.create_group('layers/' + layer + '/cell/vars')
        vars.attrs['name'] = cell
        for i, w in enumerate(weights): vars[str(i)] = w
write(sys.argv[1], 'lstm', 'lstm_cell', lstm_weights)
write(sys.argv[2], 'gru', 'gru_cell', gru_weights)
show('lstm', lstm(*lstm_weights))
show('gru', gru(*gru_weights))
)PY";

// tf.keras 2's save_weights: a group per layer with its weight_names, and each weight a dataset
// under its full name (so "lstm/lstm_cell/kernel:0" is nested in groups).
constexpr const char* kRecurrentKeras2Writer = R"PY(
with h5py.File(sys.argv[1], 'w') as f:
    f.attrs['layer_names'] = np.array([b'lstm', b'gru'])
    f.attrs['backend'] = b'tensorflow'
    f.attrs['keras_version'] = b'2.15.0'
    # The GRU reads the LSTM's sequences: units features per step.
    stacked_gru_weights = (kernel((U, 3 * U)),) + gru_weights[1:]
    for layer, weights in (('lstm', lstm_weights), ('gru', stacked_gru_weights)):
        g = f.create_group(layer)
        names = [layer + '/' + layer + '_cell/' + w + ':0' for w in ('kernel', 'recurrent_kernel', 'bias')]
        g.attrs['weight_names'] = np.array([n.encode() for n in names])
        for n, w in zip(names, weights): g[n] = w
)PY";

std::vector<double> kernel_values(std::int64_t n) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>(i % 13 - 6) / 16);
  return out;
}
std::vector<double> recurrent_values(std::int64_t n) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>(i % 7 - 3) / 32);
  return out;
}
std::vector<double> bias_values(std::int64_t n) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>(i) / 64 - 0.25);
  return out;
}

// The scripts' input x [batch, time, features].
Tensor recurrent_inputs() {
  std::vector<float> x;
  for (std::int64_t i = 0; i < kBatch * kSteps * kFeatures; ++i) x.push_back(static_cast<float>(i % 9 - 4) / 8);
  return Tensor::from_vector(x, {kBatch, kSteps, kFeatures});
}

void expect_values(const Variable& v, const Shape& shape, const std::vector<double>& want) {
  ASSERT_EQ(v.shape(), shape) << v.name();
  EXPECT_EQ(v.value().to_vector<double>(), want) << v.name();
}

void expect_near(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], 1e-5) << what << " element " << i;
}

// The weights Keras's scripts write, checked exactly, in an LSTM and a GRU of kUnits.
void expect_lstm_values(const layers::LSTM& lstm) {
  EXPECT_EQ(lstm.kernel().name(), lstm.name() + "/lstm_cell/kernel");
  expect_values(lstm.kernel(), {kFeatures, 4 * kUnits}, kernel_values(kFeatures * 4 * kUnits));
  expect_values(lstm.recurrent_kernel(), {kUnits, 4 * kUnits}, recurrent_values(kUnits * 4 * kUnits));
  expect_values(lstm.bias(), {4 * kUnits}, bias_values(4 * kUnits));
}

void expect_gru_values(const layers::GRU& gru, std::int64_t features = kFeatures) {
  EXPECT_EQ(gru.kernel().name(), gru.name() + "/gru_cell/kernel");
  expect_values(gru.kernel(), {features, 3 * kUnits}, kernel_values(features * 3 * kUnits));
  expect_values(gru.recurrent_kernel(), {kUnits, 3 * kUnits}, recurrent_values(kUnits * 3 * kUnits));
  expect_values(gru.bias(), {2, 3 * kUnits}, bias_values(2 * 3 * kUnits));
}

class RecurrentWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
    clear_session();
  }
  std::string run(const std::string& writer, const std::string& args) {
    return testing::run_python(dir_, std::string(kRecurrentValuesPy) + writer, args);
  }
  std::string dump(const std::string& path) { return testing::run_python(dir_, testing::kH5DumpScript, path); }
  ScratchDir dir_;
};

TEST_F(RecurrentWeights, Keras3FilesWrittenAsKerasWritesThemLoad) {
  const std::string out = run(kRecurrentKeras3Writer, dir_.file("lstm.weights.h5") + " " + dir_.file("gru.weights.h5"));
  Sequential lstm_model({layers::LSTM(kUnits)});
  lstm_model.build({kBatch, kSteps, kFeatures});
  lstm_model.load_weights(dir_.file("lstm.weights.h5"));
  expect_lstm_values(dynamic_cast<const layers::LSTM&>(*lstm_model.layers()[0]));
  expect_near(lstm_model(recurrent_inputs()), testing::printed_numbers(out, "lstm"),
              "LSTM output against Keras's LSTMCell in NumPy");

  Sequential gru_model({layers::GRU(kUnits)});
  gru_model.build({kBatch, kSteps, kFeatures});
  gru_model.load_weights(dir_.file("gru.weights.h5"));
  expect_gru_values(dynamic_cast<const layers::GRU&>(*gru_model.layers()[0]));
  expect_near(gru_model(recurrent_inputs()), testing::printed_numbers(out, "gru"),
              "GRU output against Keras's GRUCell in NumPy");
}

TEST_F(RecurrentWeights, AMissingCellGroupIsNamed) {
  // The LSTM's group, but not its cell's: the error names the cell, its weights and the group.
  testing::run_python(dir_, R"PY(
import sys, h5py
with h5py.File(sys.argv[1], 'w') as f:
    f.create_group('vars')
    f.create_group('layers/lstm/vars')
)PY",
                      dir_.file("no_cell.weights.h5"));
  Sequential model({layers::LSTM(kUnits)});
  model.build({kBatch, kSteps, kFeatures});
  const std::string message =
      testing::error_message<ValueError>([&] { model.load_weights(dir_.file("no_cell.weights.h5")); });
  EXPECT_TRUE(contains(message, "layer 'lstm_cell' (LSTMCell, weights lstm/lstm_cell/kernel,")) << message;
  EXPECT_TRUE(contains(message, "is missing from the file: no group /layers/lstm/cell")) << message;
}

TEST_F(RecurrentWeights, KestrelsKeras3FileKeepsTheCellWhereKerasDoes) {
  run(kRecurrentKeras3Writer, dir_.file("lstm.weights.h5") + " " + dir_.file("gru.weights.h5"));
  Sequential saved({layers::LSTM(kUnits, {.return_sequences = true}), layers::GRU(kUnits)});
  saved.build({kBatch, kSteps, kFeatures});
  saved.weights()[0].assign(Tensor::full({kFeatures, 4 * kUnits}, 0.5));
  saved.weights()[5].assign(Tensor::full({2, 3 * kUnits}, -0.25));
  saved.save_weights(dir_.file("model.weights.h5"));
  const std::string out = dump(dir_.file("model.weights.h5"));
  for (const char* line : {
           "G /layers/lstm/vars\n",
           "A /layers/lstm/vars name = lstm\n",
           "G /layers/lstm/cell\n",
           "A /layers/lstm/cell/vars name = lstm_cell\n",
           "D /layers/lstm/cell/vars/0 [3,16] first=0.5\n",
           "D /layers/lstm/cell/vars/1 [4,16]",
           "D /layers/lstm/cell/vars/2 [16]",
           "G /layers/gru/vars\n",
           "D /layers/gru/cell/vars/0 [4,12]",  // the GRU reads the LSTM's 4 units
           "D /layers/gru/cell/vars/2 [2,12] first=-0.25\n",
       }) {
    EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
  }
  EXPECT_FALSE(contains(out, "/layers/lstm/vars/")) << "the LSTM holds no weights of its own:\n" << out;
  EXPECT_FALSE(contains(out, "/layers/lstm/layers")) << out;
  EXPECT_FALSE(contains(out, "/layers/lstm/cell/vars/3")) << out;

  Sequential loaded({layers::LSTM(kUnits, {.return_sequences = true}), layers::GRU(kUnits)});
  loaded.build({kBatch, kSteps, kFeatures});
  loaded.load_weights(dir_.file("model.weights.h5"));
  testing::expect_same_weights(saved, loaded);
}

TEST_F(RecurrentWeights, Keras2FileWithCellNamesLoads) {
  run(kRecurrentKeras2Writer, dir_.file("keras2.h5"));
  for (bool by_name : {false, true}) {
    clear_session();
    Sequential model({layers::LSTM(kUnits, {.return_sequences = true}), layers::GRU(kUnits)});
    model.build({kBatch, kSteps, kFeatures});
    model.load_weights(dir_.file("keras2.h5"), {.by_name = by_name});
    expect_lstm_values(dynamic_cast<const layers::LSTM&>(*model.layers()[0]));
    expect_gru_values(dynamic_cast<const layers::GRU&>(*model.layers()[1]), kUnits);
  }
}

TEST_F(RecurrentWeights, KestrelsKeras2FileNamesTheWeightsAfterTheCell) {
  Sequential model({layers::LSTM(kUnits, {.return_sequences = true}), layers::GRU(kUnits)});
  model.build({kBatch, kSteps, kFeatures});
  model.weights()[1].assign(Tensor::full({kUnits, 4 * kUnits}, 0.75));
  model.save_weights(dir_.file("model.h5"));
  const std::string out = dump(dir_.file("model.h5"));
  for (const char* line : {
           "A /lstm weight_names = lstm/lstm_cell/kernel:0,lstm/lstm_cell/recurrent_kernel:0,lstm/lstm_cell/bias:0\n",
           "A /gru weight_names = gru/gru_cell/kernel:0,gru/gru_cell/recurrent_kernel:0,gru/gru_cell/bias:0\n",
           "D /lstm/lstm/lstm_cell/recurrent_kernel:0 [4,16] first=0.75\n",
           "D /gru/gru/gru_cell/bias:0 [2,12]",
       }) {
    EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
  }
}

}  // namespace
}  // namespace kestrel
