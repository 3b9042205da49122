// Graph: the jit's program representation — values in topological order, each an input, a
// constant, or one primitive applied to earlier values.
//
//   jit::Graph g;
//   ValueId x = g.add_input({{32, 784}, DType::float32}, "x");
//   ValueId w = g.add_constant(weights);
//   ValueId y = g.add_op(std::make_shared<MatMul>(...), {x, w}, {{32, 512}, DType::float32}, "dense");
//   g.add_output(y);
//   std::cout << g.to_string();   // %2 = matmul(%0, %1) : float32[32,512]   # dense
//
// Every primitive has one output, so a value and the node that makes it are the same thing.
//
// A train step's state (weights, optimizer slots, metric state) goes in as inputs and its new
// value comes out as an output aliased to that input:
//   g.alias_output(1, 2);    // output 1 is the new value of input 2
// so that Executor::run, when the caller donates input 2, writes output 1 into its buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/primitive.h"

namespace kestrel::jit {

using ValueId = std::int64_t;

enum class NodeKind { input, constant, op };

struct Node {
  NodeKind kind = NodeKind::op;
  std::shared_ptr<const Primitive> primitive;  ///< for ops
  std::vector<ValueId> inputs;                 ///< for ops: earlier values
  TensorSpec spec;
  Tensor constant;   ///< for constants: the captured value
  std::string name;  ///< inputs: the argument's name; ops: the layer path they ran in ("" at top level)
};

class Graph {
 public:
  ValueId add_input(const TensorSpec& spec, std::string name);
  ValueId add_constant(const Tensor& value);
  /// Appends an op; its inputs must be earlier values (checked in debug builds).
  ValueId add_op(std::shared_ptr<const Primitive> primitive, std::vector<ValueId> inputs, const TensorSpec& spec,
                 std::string scope);
  void add_output(ValueId value) {
    outputs_.push_back(value);
    output_aliases_.emplace_back();
  }
  /// Records that output `output_index` is the new value of graph input `input_index` (positions
  /// in outputs() and inputs()). Throws JitError naming both when an index is out of range, the
  /// specs differ, or the output or the input already has another alias.
  void alias_output(std::size_t output_index, std::size_t input_index);
  /// The graph input (its position in inputs()) that output `output_index` is the new value of.
  std::optional<std::size_t> output_alias(std::size_t output_index) const { return output_aliases_.at(output_index); }
  /// One entry per output: output_alias() of each.
  const std::vector<std::optional<std::size_t>>& output_aliases() const { return output_aliases_; }

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(ValueId id) const { return nodes_[static_cast<std::size_t>(id)]; }
  std::int64_t size() const { return static_cast<std::int64_t>(nodes_.size()); }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  /// Number of op nodes (each one kernel call before fusion).
  std::int64_t num_ops() const;
  /// True when value `id` is made by an op of kind `op`.
  bool is_op(ValueId id, OpId op) const;
  /// How many times each value is read, by id: once per operand of each op reading it, and once
  /// per graph output it is (a pass may fold a value into its reader only when it is read once).
  std::vector<int> reader_counts() const;

  /// Checks the invariants: inputs precede their users, outputs exist, specs match what each
  /// primitive infers, aliases pair an output and an input of one spec, one to one. Throws
  /// JitError naming the first broken node or alias.
  void verify() const;
  /// One line per value: "%3 = add(%1, %2) : float32[32,512]   # dense_1", then the outputs,
  /// aliased ones with the input they update: "outputs: %9 %12 (updates input 1 'kernel')".
  std::string to_string() const;

 private:
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<std::optional<std::size_t>> output_aliases_;  // per output: the input it updates
};

}  // namespace kestrel::jit
