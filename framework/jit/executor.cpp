#include "framework/jit/executor.h"

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace kestrel::jit {

Executor::Executor(Graph graph) : graph_(std::move(graph)) {}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  if (inputs.size() != graph_inputs.size()) {
    throw ValueError("compiled program: takes " + std::to_string(graph_inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  std::vector<Tensor> values(static_cast<std::size_t>(graph_.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Node& node = graph_.node(graph_inputs[i]);
    if (!inputs[i].defined() || inputs[i].spec() != node.spec) {
      throw ShapeError("compiled program: input '" + node.name + "' is " +
                       (inputs[i].defined() ? inputs[i].spec().to_string() : std::string("undefined")) +
                       " but the program was compiled for " + node.spec.to_string());
    }
    values[static_cast<std::size_t>(graph_inputs[i])] = inputs[i];
  }
  std::vector<Tensor> operands;
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    Tensor& out = values[static_cast<std::size_t>(id)];
    if (node.kind == NodeKind::constant) out = node.constant;
    if (node.kind != NodeKind::op) continue;
    operands.clear();
    for (ValueId in : node.inputs) operands.push_back(values[static_cast<std::size_t>(in)]);
    if (node.primitive->is_view()) {
      out = Tensor::from_buffer(operands[0].buffer(), node.spec.shape, node.spec.dtype);
    } else {
      out = Tensor::empty(node.spec.shape, node.spec.dtype);
      detail::run_kernel(*node.primitive, operands, out);
    }
  }
  std::vector<Tensor> outputs;
  outputs.reserve(graph_.outputs().size());
  for (ValueId id : graph_.outputs()) outputs.push_back(values[static_cast<std::size_t>(id)]);
  return outputs;
}

}  // namespace kestrel::jit
