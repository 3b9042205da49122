// Test support for weight files: small layers, a model, an optimizer with slots, a scratch
// directory, and a way to run h5py on a file.
//
//   TestNet net;                       // tiny_block(tiny_dense, tiny_dense_1, tiny_norm), passthrough, tiny_dense_2
//   net.build({2, 4});
//   compile_with_state(net);           // TestMomentum, stepped twice: slots hold values
//   net.save_weights(dir.file("w.weights.h5"));
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/layers/layer.h"
#include "framework/model/model.h"
#include "framework/ops/ops.h"
#include "framework/optimizers/optimizer.h"
#include "tests/support/python_peer.h"

namespace kestrel::testing {

/// kernel [in, units] and bias [units], stored in dtype (computed in float32).
class TinyDense : public Layer {
 public:
  explicit TinyDense(std::int64_t units, DType dtype = DType::float32, std::string name = "")
      : Layer("TinyDense", std::move(name)), units_(units), dtype_(dtype) {}
  void build(const Shape& input_shape) override {
    kernel_ = add_weight("kernel", {input_shape[-1], units_}, "glorot_uniform", {.dtype = dtype_});
    bias_ = add_weight("bias", {units_}, "random_normal", {.dtype = dtype_});
  }
  Tensor call(const Tensor& x, bool /*training*/) override {
    return ops::add(ops::matmul(x, ops::cast(kernel_.value(), DType::float32)),
                    ops::cast(bias_.value(), DType::float32));
  }
  const Variable& kernel() const { return kernel_; }

 private:
  std::int64_t units_;
  DType dtype_;
  Variable kernel_;
  Variable bias_;
};

/// A non-trainable weight created before a trainable one: files list the trainable one first.
class TinyNorm : public Layer {
 public:
  TinyNorm() : Layer("TinyNorm") {}
  void build(const Shape& input_shape) override {
    moving_mean_ = add_weight("moving_mean", {input_shape[-1]}, "random_normal", {.trainable = false});
    gamma_ = add_weight("gamma", {input_shape[-1]}, "random_normal");
  }
  Tensor call(const Tensor& x, bool /*training*/) override {
    return ops::multiply(ops::subtract(x, moving_mean_.value()), gamma_.value());
  }

 private:
  Variable moving_mean_;
  Variable gamma_;
};

/// No weights at all.
class Passthrough : public Layer {
 public:
  explicit Passthrough(std::string name = "") : Layer("Passthrough", std::move(name)) {}
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
};

/// Two weights under one name: a file cannot hold both, so writing it fails halfway.
class TwinWeights : public Layer {
 public:
  TwinWeights() : Layer("TwinWeights") {}
  void build(const Shape& input_shape) override {
    add_weight("w", {input_shape[-1]}, "ones");
    add_weight("w", {input_shape[-1]}, "ones");
  }
  Tensor call(const Tensor& x, bool /*training*/) override { return x; }
};

/// A layer with children: nested groups in Keras 3 files.
class TinyBlock : public Layer {
 public:
  explicit TinyBlock(std::int64_t width)
      : Layer("TinyBlock"), first_(add<TinyDense>(width)), second_(add<TinyDense>(width)), norm_(add<TinyNorm>()) {}
  Tensor call(const Tensor& x, bool training) override { return norm_(second_(first_(x, training), training)); }

 private:
  TinyDense& first_;
  TinyDense& second_;
  TinyNorm& norm_;
};

/// tiny_block (tiny_dense, tiny_dense_1, tiny_norm), passthrough, tiny_dense_2 — names as after clear_session().
class TestNet : public Model {
 public:
  explicit TestNet(std::int64_t width = 8, std::int64_t outputs = 3)
      : block_(add<TinyBlock>(width)), pass_(add<Passthrough>()), head_(add<TinyDense>(outputs)) {}
  Tensor call(const Inputs& x, bool training) override { return head_(pass_(block_(x, training), training), training); }
  TinyDense& head() { return head_; }

 private:
  TinyBlock& block_;
  Passthrough& pass_;
  TinyDense& head_;
};

/// Layers built from a list, for models of many layers or of chosen names.
class ChainNet : public Model {
 public:
  template <class MakeLayer>
  ChainNet(int count, MakeLayer make) {
    for (int i = 0; i < count; ++i) chain_.push_back(&make(*this, i));
  }
  template <class T, class... Args>
  T& add_layer(Args&&... args) {
    return add<T>(std::forward<Args>(args)...);
  }
  Tensor call(const Inputs& x, bool training) override {
    Tensor h = x;
    for (Layer* layer : chain_) h = (*layer)(h, training);
    return h;
  }

 private:
  std::vector<Layer*> chain_;
};

/// Momentum SGD with one slot per variable, so optimizer state has something to save.
class TestMomentum : public optimizers::Optimizer {
 public:
  explicit TestMomentum(double learning_rate = 0.1) : Optimizer("test_momentum", {.learning_rate = learning_rate}) {}

 protected:
  void build_slots(const std::vector<Variable>& variables) override {
    for (const Variable& v : variables) momentum_.push_back(add_slot(v, "momentum"));
  }
  void update_step(const Tensor& gradient, const Variable& variable, std::size_t index,
                   const Tensor& learning_rate) override {
    const Variable& m = momentum_[index];
    m.assign(ops::add(ops::multiply(m.value(), ops::scalar_like(m.value(), 0.9)), gradient));
    variable.assign(
        ops::subtract(variable.value(), ops::multiply(m.value(), ops::cast(learning_rate, variable.dtype()))));
  }

 private:
  std::vector<Variable> momentum_;
};

/// Compiles with TestMomentum and takes two steps with fixed gradients.
inline void compile_with_state(Model& model) {
  model.compile({.optimizer = TestMomentum()});
  std::vector<Variable> vars = model.trainable_weights();
  std::vector<Tensor> grads;
  for (const Variable& v : vars) grads.push_back(Tensor::full(v.shape(), 0.5, v.dtype()));
  model.optimizer()->apply(grads, vars);
  model.optimizer()->apply(grads, vars);
}

inline void expect_same_values(const Variable& a, const Variable& b) {
  ASSERT_EQ(a.shape(), b.shape()) << a.name();
  ASSERT_EQ(a.dtype(), b.dtype()) << a.name();
  std::vector<double> x = a.value().to_vector<double>();
  std::vector<double> y = b.value().to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << a.name() << " element " << i;
}

inline void expect_same_weights(const Layer& a, const Layer& b) {
  std::vector<Variable> wa = a.weights();
  std::vector<Variable> wb = b.weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) expect_same_values(wa[i], wb[i]);
}

/// The same optimizer variables, value for value (both models compiled).
inline void expect_same_optimizer_state(const Model& a, const Model& b) {
  ASSERT_TRUE(a.compiled() && b.compiled());
  std::vector<Variable> sa = a.optimizer()->variables();
  std::vector<Variable> sb = b.optimizer()->variables();
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) expect_same_values(sa[i], sb[i]);
}

/// A fresh directory per test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        "kestrel_saving_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterized tests are named "Suite/Test/Param"
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  /// Names of the files in the directory.
  std::vector<std::string> listing() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      out.push_back(entry.path().filename().string());
    return out;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// True when /usr/bin/python3 can import h5py (Debian's python3-h5py).
/// A Python script (h5py) printing an HDF5 file's groups ("G /path"), datasets with their shape
/// and first value ("D /path [4,8] first=0.5") and name and weight_names attributes
/// ("A /path name = dense"), one per line.
inline constexpr const char* kH5DumpScript = R"PY(
import sys, h5py, numpy as np
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        print('D', obj.name, '[' + ','.join(map(str, obj.shape)) + ']', 'first=%g' % np.asarray(obj[()]).reshape(-1)[0])
    else:
        print('G', obj.name)
    for k in ('name', 'weight_names'):
        if k in obj.attrs:
            v = obj.attrs[k]
            if isinstance(v, np.ndarray): v = ','.join(s.decode() for s in v.tolist())
            print('A', obj.name, k, '=', v.decode() if isinstance(v, bytes) else v)
with h5py.File(sys.argv[1], 'r') as f:
    f.visititems(visit)
)PY";

/// Python (h5py) for writing files as tf.keras 2.15 writes them, which scripts that make such
/// files start with: `dense(name, units, activation, extra)` a Dense layer's config,
/// `adam_config` tf.keras 2's "Custom>Adam" optimizer config (learning rate 5e-4), and
/// `write_keras2_file(f, model_config, training_config, layer_names, weights)` the root attributes
/// and the model_weights group of an open h5py file ({layer: [(weight, array), ...]}).
inline constexpr const char* kKeras2FileWriters = R"PY(
import json, sys, h5py, numpy as np
init = lambda name: {"class_name": name, "config": {"seed": None} if name == "GlorotUniform" else {}}
def dense(name, units, activation, extra={}):
    config = {"name": name, "trainable": True, "dtype": "float32", "units": units, "activation": activation,
              "use_bias": True, "kernel_initializer": init("GlorotUniform"), "bias_initializer": init("Zeros"),
              "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
              "kernel_constraint": None, "bias_constraint": None}
    config.update(extra)
    return {"class_name": "Dense", "config": config}
adam_config = {"class_name": "Custom>Adam", "config": {
    "name": "Adam", "weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
    "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None, "jit_compile": True,
    "is_legacy_optimizer": False, "learning_rate": 0.0005, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-07,
    "amsgrad": False}}
def write_keras2_file(f, model_config, training_config, layer_names, weights):
    f.attrs["keras_version"] = "2.15.0"
    f.attrs["backend"] = "tensorflow"
    f.attrs["model_config"] = json.dumps(model_config).encode("utf8")
    f.attrs["training_config"] = json.dumps(training_config).encode("utf8")
    g = f.create_group("model_weights")
    g.attrs["layer_names"] = [n.encode() for n in layer_names]
    g.attrs["backend"] = b"tensorflow"
    g.attrs["keras_version"] = b"2.15.0"
    for layer in layer_names:
        names = ["%s/%s:0" % (layer, w) for w, _ in weights.get(layer, [])]
        g.create_group(layer).attrs["weight_names"] = [n.encode() for n in names] if names else np.array([], "float64")
        for n, (_, v) in zip(names, weights.get(layer, [])):
            g[layer].create_dataset(n, data=v)
)PY";

/// The numbers after "<label> " on the line of a script's output that starts with it.
inline std::vector<double> printed_numbers(const std::string& out, const std::string& label) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(label + " ", 0) != 0) continue;
    std::istringstream numbers(line.substr(label.size() + 1));
    std::vector<double> values;
    for (double v = 0; numbers >> v;) values.push_back(v);
    return values;
  }
  ADD_FAILURE() << "no line '" << label << " ...' in:\n" << out;
  return {};
}

inline bool have_h5py() { return have_python_module("h5py"); }

/// Runs a Python script (written to dir) with arguments; returns its output, failing the test on a non-zero exit.
inline std::string run_python(const ScratchDir& dir, const std::string& script, const std::string& args) {
  const std::string script_path = dir.file("script.py");
  write_bytes(script_path, script);
  return run_python_file(script_path, args);
}

}  // namespace kestrel::testing
