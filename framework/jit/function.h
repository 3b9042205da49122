// jit::Function: a function of tensors compiled once per input signature, as tf.function /
// jax.jit. The first call with a new signature traces the function into a graph and compiles it;
// later calls with that signature replay the compiled program.
//
//   jit::Function step([&](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{ops::relu(ops::matmul(in[0], w))};
//   }, "dense_relu");
//   step({x});          // traces and compiles: logged with its reason, counted
//   step({x});          // replays
//   step({x_longer});   // a new shape: compiles again (XLA's rule 3)
//   step.compile_count();   // 2
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/jit/program_cache.h"

namespace kestrel::jit {

/// The input specs a program is compiled for: "x: float32[32,784], y: int64[32]".
std::string signature_of(const std::vector<TensorSpec>& specs, const std::vector<std::string>& names);

class Function {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  /// `names` name the inputs in logs and errors (default "input_0", ...).
  Function(Fn fn, std::string name, std::vector<std::string> names = {});

  /// Runs the compiled program for these inputs' signature, compiling it first if it is new.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  std::int64_t compile_count() const { return programs_.compile_count(); }
  double compile_seconds() const { return programs_.compile_seconds(); }
  /// The graph compiled for a signature (as signature_of prints it), or null.
  const Graph* graph(const std::string& signature) const { return programs_.graph(signature); }
  const std::string& name() const { return programs_.function_name(); }

 private:
  Graph trace(const std::vector<Tensor>& inputs) const;

  Fn fn_;
  std::vector<std::string> names_;
  ProgramCache programs_;
};

}  // namespace kestrel::jit
