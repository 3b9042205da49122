// MultiHeadAttention and TransformerEncoder weights in Keras 3 files: Keras's saving_lib walks a
// layer's attributes, so a MultiHeadAttention's projections sit under its query_dense, key_dense,
// value_dense and output_dense properties (/layers/multi_head_attention/query_dense/vars/0, 1),
// and keras_hub's TransformerEncoder keeps its sublayers under private attributes
// (/layers/transformer_encoder/_self_attention_layer/query_dense/vars/0). Files written by h5py in
// those layouts load with their exact values and give the NumPy reference's outputs, and Kestrel's
// own files show the same layout to h5py.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "framework/layers/input_layer.h"
#include "framework/layers/multi_head_attention.h"
#include "framework/layers/transformer_encoder.h"
#include "framework/model/model.h"
#include "tests/framework/saving/saving_test_util.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::ScratchDir;

constexpr std::int64_t kAttentionBatch = 2, kPositions = 3, kDim = 8, kHeads = 2, kHeadDim = 4, kIntermediate = 16;

// Each weight's values come from fill(shape, salt): multiples of 1/32 that float32 holds exactly,
// a different pattern per salt. The same formula here gives the values the variables must hold.
constexpr const char* kAttentionValuesPy = R"PY(
import sys, h5py, numpy as np
B, T, D, H, K, I = 2, 3, 8, 2, 4, 16
def fill(shape, salt):
    n = int(np.prod(shape))
    return (((np.arange(n) * 7 + salt * 5) % 17 - 8) / 32).reshape(shape).astype(np.float32)
x = ((np.arange(B * T * D) % 9 - 4) / 8).reshape(B, T, D)
# Keras's EinsumDense weights: query, key, value kernels [D, H, K] with biases [H, K]; the output
# kernel [H, K, D] with bias [D].
projections = {
    'query_dense': ('query', fill((D, H, K), 1), fill((H, K), 2)),
    'key_dense': ('key', fill((D, H, K), 3), fill((H, K), 4)),
    'value_dense': ('value', fill((D, H, K), 5), fill((H, K), 6)),
    'output_dense': ('attention_output', fill((H, K, D), 7), fill((D,), 8)),
}
norm1 = (fill((D,), 9), fill((D,), 10))
norm2 = (fill((D,), 11), fill((D,), 12))
intermediate = (fill((D, I), 13), fill((I,), 14))
output = (fill((I, D), 15), fill((D,), 16))

# Keras 3's saving_lib: H5IOStore.make(path, {"name": ...}) makes <path>/vars with the layer's
# name on it, for every layer it visits (an empty vars for one without weights), and
# save_own_variables stores its weights as "0", "1", ...
def layer(f, path, name, weights=()):
    vars = f.create_group(path + '/vars' if path else 'vars')
    vars.attrs['name'] = name
    for i, w in enumerate(weights): vars[str(i)] = w
# MultiHeadAttention: the public properties first, in sorted order; the private _query_dense etc.
# are the same objects and skipped; _dropout_layer and _softmax hold no weights.
def multi_head_attention(f, path, name):
    layer(f, path, name)
    for attribute in sorted(projections):
        sublayer, kernel, bias = projections[attribute]
        layer(f, path + '/' + attribute, sublayer, (kernel, bias))
    layer(f, path + '/_dropout_layer', 'dropout')
    layer(f, path + '/_softmax', 'softmax')
# A Functional model: its layers (the InputLayer first) under layers/<snake_case class>.
def functional(path, write_layer):
    with h5py.File(path, 'w') as f:
        layer(f, '', 'functional')
        layer(f, 'layers/input_layer', 'input_layer')
        write_layer(f)
# keras_hub's TransformerEncoder: no public sublayers; its private attributes in sorted order.
def transformer_encoder(f, path, name):
    layer(f, path, name)
    layer(f, path + '/_feedforward_dropout', 'feedforward_dropout')
    layer(f, path + '/_feedforward_intermediate_dense', 'feedforward_intermediate_dense', intermediate)
    layer(f, path + '/_feedforward_layer_norm', 'feedforward_layer_norm', norm2)
    layer(f, path + '/_feedforward_output_dense', 'feedforward_output_dense', output)
    layer(f, path + '/_self_attention_dropout', 'self_attention_dropout')
    multi_head_attention(f, path + '/_self_attention_layer', 'self_attention_layer')
    layer(f, path + '/_self_attention_layer_norm', 'self_attention_layer_norm', norm1)

# Keras's MultiHeadAttention and keras_hub's post-LN TransformerEncoder in NumPy.
def project(h, attribute):
    _, kernel, bias = projections[attribute]
    return np.einsum('btd,dhk->bthk', h, kernel) + bias
def attention(h):
    q = project(h, 'query_dense') / np.sqrt(K)
    k = project(h, 'key_dense')
    v = project(h, 'value_dense')
    scores = np.einsum('bshk,bthk->bhts', k, q)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum('bhts,bshk->bthk', probs, v)
    _, kernel, bias = projections['output_dense']
    return np.einsum('bthk,hkd->btd', context, kernel) + bias
def layer_norm(h, gamma, beta):
    mean = h.mean(-1, keepdims=True)
    variance = ((h - mean) ** 2).mean(-1, keepdims=True)
    return (h - mean) / np.sqrt(variance + 1e-5) * gamma + beta
def encoder(h):
    h = layer_norm(h + attention(h), *norm1)
    f = np.maximum(h @ intermediate[0] + intermediate[1], 0) @ output[0] + output[1]
    return layer_norm(h + f, *norm2)
def show(label, h): print(label, ' '.join('%.9g' % v for v in h.reshape(-1)))
)PY";

constexpr const char* kAttentionKeras3Writer = R"PY(
functional(sys.argv[1], lambda f: multi_head_attention(f, 'layers/multi_head_attention', 'multi_head_attention'))
functional(sys.argv[2], lambda f: transformer_encoder(f, 'layers/transformer_encoder', 'transformer_encoder'))
show('attention', attention(x))
show('encoder', encoder(x))
)PY";

std::vector<double> fill(std::int64_t n, int salt) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(static_cast<double>((i * 7 + salt * 5) % 17 - 8) / 32);
  return out;
}

// The scripts' input x [batch, positions, dim].
Tensor attention_inputs() {
  std::vector<float> x;
  for (std::int64_t i = 0; i < kAttentionBatch * kPositions * kDim; ++i) x.push_back(static_cast<float>(i % 9 - 4) / 8);
  return Tensor::from_vector(x, {kAttentionBatch, kPositions, kDim});
}

void expect_values(const Variable& v, const std::string& name, const Shape& shape, int salt) {
  EXPECT_EQ(v.name(), name);
  ASSERT_EQ(v.shape(), shape) << v.name();
  EXPECT_EQ(v.value().to_vector<double>(), fill(shape.numel(), salt)) << v.name();
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tolerance, const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tolerance) << what << " element " << i;
}

// The scripts' projection weights, exactly, in a MultiHeadAttention whose weights are named from `prefix`.
void expect_attention_values(const layers::MultiHeadAttention& mha, const std::string& prefix) {
  expect_values(mha.query_dense().kernel(), prefix + "/query/kernel", {kDim, kHeads, kHeadDim}, 1);
  expect_values(mha.query_dense().bias(), prefix + "/query/bias", {kHeads, kHeadDim}, 2);
  expect_values(mha.key_dense().kernel(), prefix + "/key/kernel", {kDim, kHeads, kHeadDim}, 3);
  expect_values(mha.key_dense().bias(), prefix + "/key/bias", {kHeads, kHeadDim}, 4);
  expect_values(mha.value_dense().kernel(), prefix + "/value/kernel", {kDim, kHeads, kHeadDim}, 5);
  expect_values(mha.value_dense().bias(), prefix + "/value/bias", {kHeads, kHeadDim}, 6);
  expect_values(mha.output_dense().kernel(), prefix + "/attention_output/kernel", {kHeads, kHeadDim, kDim}, 7);
  expect_values(mha.output_dense().bias(), prefix + "/attention_output/bias", {kDim}, 8);
}

template <class T>
const T& only_layer_of(const Model& model) {
  const T* found = nullptr;
  for (const Layer* layer : model.layers()) {
    if (const auto* t = dynamic_cast<const T*>(layer)) {
      EXPECT_EQ(found, nullptr) << "two layers of the class";
      found = t;
    }
  }
  if (found == nullptr) throw ValueError("the model holds no layer of the class");
  return *found;
}

// Input [positions, dim] -> MultiHeadAttention(2, 4)(x, x).
std::unique_ptr<Model> attention_model() {
  const Tensor x = Input({kPositions, kDim});
  return std::make_unique<Model>(x, layers::MultiHeadAttention(kHeads, kHeadDim)(x, x));
}

// Input [positions, dim] -> TransformerEncoder(intermediate_dim 16, 2 heads).
std::unique_ptr<Model> encoder_model() {
  const Tensor x = Input({kPositions, kDim});
  return std::make_unique<Model>(
      x, layers::TransformerEncoder({.intermediate_dim = kIntermediate, .num_heads = static_cast<int>(kHeads)})(x));
}

// Every weight of `model` set to fill(n, salt) with salts 1, 2, ... in weight order.
void assign_distinct_values(const Model& model) {
  int salt = 1;
  for (const Variable& v : model.weights()) {
    const std::vector<double> values = fill(v.shape().numel(), salt++);
    v.assign(Tensor::from_vector(std::vector<float>(values.begin(), values.end()), v.shape()));
  }
}

void expect_lines(const std::string& out, const std::vector<std::string>& lines) {
  for (const std::string& line : lines) EXPECT_TRUE(contains(out, line)) << "missing: " << line << "\nin:\n" << out;
}

class AttentionWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_h5py()) GTEST_SKIP() << "/usr/bin/python3 cannot import h5py";
    clear_session();
  }
  std::string write_keras_files() {
    return testing::run_python(dir_, std::string(kAttentionValuesPy) + kAttentionKeras3Writer,
                               dir_.file("attention.weights.h5") + " " + dir_.file("encoder.weights.h5"));
  }
  std::string dump(const std::string& path) { return testing::run_python(dir_, testing::kH5DumpScript, path); }
  ScratchDir dir_;
};

TEST_F(AttentionWeights, AKeras3MultiHeadAttentionFileLoadsWithItsValues) {
  const std::string out = write_keras_files();
  const std::unique_ptr<Model> model = attention_model();
  model->load_weights(dir_.file("attention.weights.h5"));
  expect_attention_values(only_layer_of<layers::MultiHeadAttention>(*model), "multi_head_attention");
  expect_near((*model)(attention_inputs()), testing::printed_numbers(out, "attention"), 1e-5,
              "MultiHeadAttention output against Keras's in NumPy");
}

TEST_F(AttentionWeights, KestrelsMultiHeadAttentionFileKeepsTheProjectionsWhereKerasDoes) {
  const std::unique_ptr<Model> saved = attention_model();
  assign_distinct_values(*saved);  // query kernel salt 1 (first -3/32), ..., output bias salt 8 (-2/32)
  saved->save_weights(dir_.file("model.weights.h5"));
  const std::string out = dump(dir_.file("model.weights.h5"));
  expect_lines(out, {
                        "G /layers/multi_head_attention/vars\n",
                        "D /layers/multi_head_attention/query_dense/vars/0 [8,2,4] first=-0.09375\n",
                        "D /layers/multi_head_attention/query_dense/vars/1 [2,4] first=0.0625\n",
                        "D /layers/multi_head_attention/key_dense/vars/0 [8,2,4] first=0.21875\n",
                        "D /layers/multi_head_attention/key_dense/vars/1 [2,4]",
                        "D /layers/multi_head_attention/value_dense/vars/0 [8,2,4]",
                        "D /layers/multi_head_attention/value_dense/vars/1 [2,4]",
                        "D /layers/multi_head_attention/output_dense/vars/0 [2,4,8]",
                        "D /layers/multi_head_attention/output_dense/vars/1 [8] first=-0.0625\n",
                        "G /layers/multi_head_attention/_dropout_layer/vars\n",
                    });
  EXPECT_FALSE(contains(out, "/layers/multi_head_attention/layers")) << out;
  EXPECT_FALSE(contains(out, "/layers/multi_head_attention/vars/")) << "it holds no weights of its own:\n" << out;
  EXPECT_FALSE(contains(out, "/_dropout_layer/vars/")) << out;

  clear_session();
  const std::unique_ptr<Model> loaded = attention_model();
  loaded->load_weights(dir_.file("model.weights.h5"));
  testing::expect_same_weights(*saved, *loaded);
}

TEST_F(AttentionWeights, AKerasHubTransformerEncoderFileLoadsWithItsValues) {
  const std::string out = write_keras_files();
  const std::unique_ptr<Model> model = encoder_model();
  model->load_weights(dir_.file("encoder.weights.h5"));
  const auto& block = only_layer_of<layers::TransformerEncoder>(*model);
  ASSERT_NE(block.self_attention(), nullptr);
  expect_attention_values(*block.self_attention(), "transformer_encoder/self_attention_layer");
  const std::vector<Variable> w = block.weights();
  ASSERT_EQ(w.size(), 16U);
  expect_values(w[8], "transformer_encoder/self_attention_layer_norm/gamma", {kDim}, 9);
  expect_values(w[9], "transformer_encoder/self_attention_layer_norm/beta", {kDim}, 10);
  expect_values(w[10], "transformer_encoder/feedforward_layer_norm/gamma", {kDim}, 11);
  expect_values(w[11], "transformer_encoder/feedforward_layer_norm/beta", {kDim}, 12);
  expect_values(w[12], "transformer_encoder/feedforward_intermediate_dense/kernel", {kDim, kIntermediate}, 13);
  expect_values(w[13], "transformer_encoder/feedforward_intermediate_dense/bias", {kIntermediate}, 14);
  expect_values(w[14], "transformer_encoder/feedforward_output_dense/kernel", {kIntermediate, kDim}, 15);
  expect_values(w[15], "transformer_encoder/feedforward_output_dense/bias", {kDim}, 16);
  expect_near((*model)(attention_inputs()), testing::printed_numbers(out, "encoder"), 1e-4,
              "TransformerEncoder output against keras_hub's in NumPy");
}

TEST_F(AttentionWeights, KestrelsTransformerEncoderFileKeepsTheSublayersWhereKerasHubDoes) {
  const std::unique_ptr<Model> saved = encoder_model();
  assign_distinct_values(*saved);  // salts 1..16 in weight order, as the scripts' fill() numbers them
  saved->save_weights(dir_.file("model.weights.h5"));
  const std::string out = dump(dir_.file("model.weights.h5"));
  const std::string block = "/layers/transformer_encoder/";
  expect_lines(out, {
                        "G " + block + "vars\n",
                        "D " + block + "_self_attention_layer/query_dense/vars/0 [8,2,4] first=-0.09375\n",
                        "D " + block + "_self_attention_layer/output_dense/vars/1 [8] first=-0.0625\n",
                        "G " + block + "_self_attention_layer/_dropout_layer/vars\n",
                        "D " + block + "_self_attention_layer_norm/vars/0 [8] first=0.09375\n",
                        "G " + block + "_self_attention_dropout/vars\n",
                        "D " + block + "_feedforward_layer_norm/vars/1 [8]",
                        "D " + block + "_feedforward_intermediate_dense/vars/0 [8,16]",
                        "D " + block + "_feedforward_intermediate_dense/vars/1 [16]",
                        "D " + block + "_feedforward_output_dense/vars/0 [16,8]",
                        "D " + block + "_feedforward_output_dense/vars/1 [8]",
                        "G " + block + "_feedforward_dropout/vars\n",
                    });
  EXPECT_FALSE(contains(out, block + "layers")) << out;
  EXPECT_FALSE(contains(out, block + "_self_attention_layer/layers")) << out;

  clear_session();
  const std::unique_ptr<Model> loaded = encoder_model();
  loaded->load_weights(dir_.file("model.weights.h5"));
  testing::expect_same_weights(*saved, *loaded);
}

TEST_F(AttentionWeights, AFileWithTheProjectionsListedAsLayersNamesTheMissingGroup) {
  // The layout without attributes (/layers/multi_head_attention/layers/einsum_dense/...) does not
  // hold Keras's groups: the error names the projection, its weights and the group it looked for.
  testing::run_python(dir_, R"PY(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    f.create_group('vars')
    f.create_group('layers/multi_head_attention/vars')
    f['layers/multi_head_attention/layers/einsum_dense/vars/0'] = np.zeros((8, 2, 4), np.float32)
    f['layers/multi_head_attention/layers/einsum_dense/vars/1'] = np.zeros((2, 4), np.float32)
)PY",
                      dir_.file("listed.weights.h5"));
  const std::unique_ptr<Model> model = attention_model();
  const std::string message =
      testing::error_message<ValueError>([&] { model->load_weights(dir_.file("listed.weights.h5")); });
  EXPECT_TRUE(contains(message, "layer 'query' (EinsumDense, weights multi_head_attention/query/kernel,")) << message;
  EXPECT_TRUE(contains(message, "no group /layers/multi_head_attention/query_dense")) << message;
}

}  // namespace
}  // namespace kestrel
