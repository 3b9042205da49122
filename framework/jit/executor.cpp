#include "framework/jit/executor.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace kestrel::jit {

Executor::Executor(Graph graph) : graph_(std::move(graph)), plan_(plan_memory(graph_)) {
  const auto n = static_cast<std::size_t>(graph_.size());
  data_.assign(n, nullptr);
  owned_.resize(n);
  if (plan_.arena_bytes > 0) arena_ = Buffer::allocate(static_cast<std::size_t>(plan_.arena_bytes));
  auto* base = arena_ ? static_cast<std::byte*>(arena_->data()) : nullptr;
  std::size_t most_inputs = 0;
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
    most_inputs = std::max(most_inputs, node.inputs.size());
    // Kernels take mutable views, but nothing writes into a constant: only outputs are written.
    if (v.storage == Storage::constant) data_[static_cast<std::size_t>(id)] = const_cast<void*>(node.constant.raw_data());
    if (v.storage == Storage::arena && base != nullptr) data_[static_cast<std::size_t>(id)] = base + v.offset;
    if (v.storage == Storage::output) output_roots_.push_back(id);
  }
  operands_.resize(most_inputs);
  wide_operands_.resize(most_inputs);
}

void Executor::check_inputs(const std::vector<Tensor>& inputs) const {
  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  if (inputs.size() != graph_inputs.size()) {
    throw ValueError("compiled program: takes " + std::to_string(graph_inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Node& node = graph_.node(graph_inputs[i]);
    if (!inputs[i].defined() || inputs[i].spec() != node.spec) {
      throw ShapeError("compiled program: input '" + node.name + "' is " +
                       (inputs[i].defined() ? inputs[i].spec().to_string() : std::string("undefined")) +
                       " but the program was compiled for " + node.spec.to_string());
    }
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
  check_inputs(inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  // Whether the run returns or a kernel throws, the executor must not keep this run's outputs (nor
  // pointers into the caller's inputs) alive until the next one.
  auto forget_run = [&] {
    for (ValueId id : output_roots_) owned_[static_cast<std::size_t>(id)] = Tensor();
    for (ValueId id : graph_inputs) data_[static_cast<std::size_t>(id)] = nullptr;
  };
  struct OnExit {
    decltype(forget_run)& fn;
    ~OnExit() { fn(); }
  } on_exit{forget_run};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // Read-only, like constants: raw_data() also rejects a symbolic tensor (JitError).
    data_[static_cast<std::size_t>(graph_inputs[i])] = const_cast<void*>(inputs[i].raw_data());
  }
  for (ValueId id : output_roots_) {
    const Node& node = graph_.node(id);
    Tensor& out = owned_[static_cast<std::size_t>(id)];
    out = Tensor::empty(node.spec.shape, node.spec.dtype);
    data_[static_cast<std::size_t>(id)] = out.view().data;
  }
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    if (node.kind != NodeKind::op) continue;
    if (node.primitive->is_view()) {
      data_[static_cast<std::size_t>(id)] = data_[static_cast<std::size_t>(node.inputs[0])];
    } else {
      run_node(node, id);
    }
  }
  return collect_outputs(inputs);
}

void Executor::run_node(const Node& node, ValueId id) const {
  if (plan_.values[static_cast<std::size_t>(id)].scratch_bytes > 0) {
    run_widened(node, id);
    return;
  }
  for (std::size_t k = 0; k < node.inputs.size(); ++k) {
    const Node& in = graph_.node(node.inputs[k]);
    operands_[k] = TensorView{data_[static_cast<std::size_t>(node.inputs[k])], in.spec.shape, in.spec.dtype};
  }
  node.primitive->eval_cpu(std::span<const TensorView>(operands_.data(), node.inputs.size()),
                           TensorView{data_[static_cast<std::size_t>(id)], node.spec.shape, node.spec.dtype});
}

// A float32-only kernel on bfloat16 data, as the eager dispatcher runs it (bfloat16 storage, float32
// compute), with the float32 copies in the plan's scratch block instead of fresh buffers.
void Executor::run_widened(const Node& node, ValueId id) const {
  const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
  std::byte* scratch = static_cast<std::byte*>(arena_->data()) + v.scratch_offset;
  for (std::size_t k = 0; k < node.inputs.size(); ++k) {
    const Node& in = graph_.node(node.inputs[k]);
    TensorView view{data_[static_cast<std::size_t>(node.inputs[k])], in.spec.shape, in.spec.dtype};
    if (in.spec.dtype == DType::bfloat16) {
      TensorView wide{scratch, in.spec.shape, DType::float32};
      scratch += aligned_bytes(in.spec.shape.numel() * 4);
      detail::widen_to_float32(view, wide);  // as the eager dispatcher, so results match bit for bit
      view = wide;
    }
    wide_operands_[k] = view;
  }
  const std::span<const TensorView> operands(wide_operands_.data(), node.inputs.size());
  TensorView out{data_[static_cast<std::size_t>(id)], node.spec.shape, node.spec.dtype};
  if (node.spec.dtype != DType::bfloat16) {
    node.primitive->eval_cpu(operands, out);
    return;
  }
  TensorView wide_out{scratch, node.spec.shape, DType::float32};
  node.primitive->eval_cpu(operands, wide_out);
  detail::round_to_bfloat16(wide_out, out);
}

std::vector<Tensor> Executor::collect_outputs(const std::vector<Tensor>& inputs) const {
  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  // The tensor that owns a root value's memory: the caller's input, the constant, or this run's buffer.
  auto owner = [&](ValueId root) -> const Tensor& {
    const Node& node = graph_.node(root);
    if (node.kind == NodeKind::constant) return node.constant;
    if (node.kind == NodeKind::input) {
      auto at = std::find(graph_inputs.begin(), graph_inputs.end(), root);
      return inputs[static_cast<std::size_t>(at - graph_inputs.begin())];
    }
    return owned_[static_cast<std::size_t>(root)];
  };
  std::vector<Tensor> outputs;
  outputs.reserve(graph_.outputs().size());
  for (ValueId id : graph_.outputs()) {
    const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
    if (v.storage != Storage::view) {
      outputs.push_back(owner(id));
    } else {
      // A view shares its root's buffer, as the eager reshape does.
      const TensorSpec& spec = graph_.node(id).spec;
      outputs.push_back(Tensor::from_buffer(owner(v.root).buffer(), spec.shape, spec.dtype));
    }
  }
  return outputs;
}

}  // namespace kestrel::jit
