#include "framework/jit/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "framework/core/error.h"
#include "framework/jit/profile.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/kernels/cpu_kernels.h"

namespace kestrel::jit {
namespace {

std::size_t nbytes(const TensorSpec& spec) {
  return static_cast<std::size_t>(spec.shape.numel()) * size_of(spec.dtype);
}

void copy_bytes(void* to, const void* from, std::size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);  // an empty tensor may have no memory at all
}

bool is_donated(const std::vector<bool>& donated, std::size_t input_index) {
  return input_index < donated.size() && donated[input_index];
}

}  // namespace

Executor::Executor(Graph graph, std::shared_ptr<Arena> arena, const std::string& name)
    : graph_(std::move(graph)),
      name_(name),
      plan_(plan_memory(graph_)),
      arena_(arena ? std::move(arena) : std::make_shared<Arena>()),
      profiler_(profiling() ? std::make_unique<ProgramProfiler>(name_, graph_) : nullptr) {
  const auto n = static_cast<std::size_t>(graph_.size());
  data_.assign(n, nullptr);
  owned_.resize(n);
  {
    // The memory is taken now, at compile time, not by the first run.
    std::lock_guard<std::mutex> lock(arena_->mutex());
    bind_arena();
  }
  std::size_t most_inputs = 0;
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
    most_inputs = std::max(most_inputs, node.inputs.size());
    // Kernels take mutable views, but nothing writes into a constant: only outputs are written.
    if (v.storage == Storage::constant) {
      data_[static_cast<std::size_t>(id)] = const_cast<void*>(node.constant.raw_data());
      constant_buffers_.push_back(node.constant.raw_data());
    }
    if (v.storage == Storage::output) output_roots_.push_back(id);
  }
  std::sort(constant_buffers_.begin(), constant_buffers_.end());
  operands_.resize(most_inputs);
  wide_operands_.resize(most_inputs);

  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  input_position_.assign(n, -1);
  for (std::size_t i = 0; i < graph_inputs.size(); ++i) {
    input_position_[static_cast<std::size_t>(graph_inputs[i])] = static_cast<std::int64_t>(i);
  }
  input_buffers_.reserve(graph_inputs.size());
  alias_of_output_.assign(graph_.outputs().size(), -1);
  alias_of_root_.assign(n, -1);
  overwritten_when_donated_.assign(graph_inputs.size(), false);
  alias_copies_.resize(plan_.aliases.size());
  for (std::size_t a = 0; a < plan_.aliases.size(); ++a) {
    const AliasPlan& alias = plan_.aliases[a];
    alias_of_output_[alias.output_index] = static_cast<std::int64_t>(a);
    if (alias.write == AliasWrite::direct || alias.write == AliasWrite::at_end) {
      alias_of_root_[static_cast<std::size_t>(alias.root)] = static_cast<std::int64_t>(a);
    }
    overwritten_when_donated_[alias.input_index] = alias.write != AliasWrite::unchanged;
  }
  // The output whose last buffer a root is written into: the root itself when it is an output,
  // else the first output viewing it (a reshape), whose buffer has the root's bytes.
  output_of_root_.assign(n, -1);
  for (const bool views : {false, true}) {
    for (std::size_t k = 0; k < graph_.outputs().size(); ++k) {
      const ValuePlan& output = plan_.values[static_cast<std::size_t>(graph_.outputs()[k])];
      if ((output.storage == Storage::view) != views) continue;
      const auto root = static_cast<std::size_t>(views ? output.root : graph_.outputs()[k]);
      if (plan_.values[root].storage == Storage::output && output_of_root_[root] < 0) {
        output_of_root_[root] = static_cast<std::int64_t>(k);
      }
    }
  }
}

// Out of line, where ProgramProfiler is complete.
Executor::~Executor() = default;

std::byte* Executor::arena_at(std::int64_t offset) const { return arena_base_ ? arena_base_ + offset : nullptr; }

void Executor::bind_arena() const {
  std::byte* base = arena_->reserve(plan_.arena_bytes);
  if (base == arena_base_) return;
  arena_base_ = base;  // a larger program grew the shared block: the values move with it
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
    if (v.storage == Storage::arena) data_[static_cast<std::size_t>(id)] = arena_at(v.offset);
  }
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

// A donated buffer is written while the run reads the others: it must be no other input's, and
// not a constant the program keeps (a plain output can return one, and the caller pass it back).
void Executor::check_donation(const std::vector<Tensor>& inputs, const std::vector<bool>& donated) const {
  if (donated.empty()) return;
  if (donated.size() != inputs.size()) {
    throw ValueError("compiled program: " + std::to_string(donated.size()) + " donation flags for " +
                     std::to_string(inputs.size()) + " inputs; pass one per input, or none");
  }
  auto name = [&](std::size_t i) { return "'" + graph_.node(graph_.inputs()[i]).name + "'"; };
  input_buffers_.clear();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const void* buffer = inputs[i].buffer().get();
    if (buffer == nullptr) continue;  // symbolic: raw_data() names the problem
    input_buffers_.emplace_back(buffer, i);
    if (donated[i] && std::binary_search(constant_buffers_.begin(), constant_buffers_.end(), inputs[i].raw_data())) {
      throw ValueError("compiled program: input " + name(i) +
                       " is donated, but its buffer is a constant of the program (returned by an earlier run?); "
                       "donate a copy");
    }
  }
  std::sort(input_buffers_.begin(), input_buffers_.end());
  for (std::size_t k = 1; k < input_buffers_.size(); ++k) {
    const auto [buffer, i] = input_buffers_[k];
    const auto [previous, j] = input_buffers_[k - 1];
    if (buffer != previous || (!donated[i] && !donated[j])) continue;
    throw ValueError("compiled program: inputs " + name(std::min(i, j)) + " and " + name(std::max(i, j)) +
                     " share one buffer, and one is donated: the run would overwrite what the other reads; "
                     "donate neither, or pass a copy");
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs, const std::vector<bool>& donated,
                                  std::vector<Tensor>* reused) const {
  check_inputs(inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  std::lock_guard<std::mutex> arena_lock(arena_->mutex());
  bind_arena();
  check_donation(inputs, donated);
  const std::vector<ValueId>& graph_inputs = graph_.inputs();
  // Whether the run returns or a kernel throws, the executor must not keep this run's outputs (nor
  // pointers into the caller's inputs) alive until the next one.
  auto forget_run = [&] {
    for (ValueId id : output_roots_) owned_[static_cast<std::size_t>(id)] = Tensor();
    for (ValueId id : graph_inputs) {
      data_[static_cast<std::size_t>(id)] = nullptr;
      owned_[static_cast<std::size_t>(id)] = Tensor();
    }
    for (Tensor& copy : alias_copies_) copy = Tensor();
  };
  struct OnExit {
    decltype(forget_run)& fn;
    ~OnExit() { fn(); }
  } on_exit{forget_run};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    // Read-only, like constants, unless donated: raw_data() also rejects a symbolic tensor (JitError).
    data_[static_cast<std::size_t>(graph_inputs[i])] = const_cast<void*>(inputs[i].raw_data());
  }
  save_old_values(inputs, donated);
  place_outputs(donated, reused);
  for (ValueId id = 0; id < graph_.size(); ++id) {
    const Node& node = graph_.node(id);
    if (node.kind != NodeKind::op) continue;
    if (node.primitive->is_view()) {
      data_[static_cast<std::size_t>(id)] = data_[static_cast<std::size_t>(node.inputs[0])];
    } else if (profiler_) {
      const auto start = std::chrono::steady_clock::now();
      run_node(node, id);
      profiler_->add(
          id, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    } else {
      run_node(node, id);
    }
  }
  if (profiler_) profiler_->finish_run();
  write_aliases(donated);
  return collect_outputs(inputs, donated);
}

// Before any kernel runs: what a donated buffer is about to lose but the run still returns. An
// input another state copies is saved in the arena; an input a plain output returns, in a buffer
// of its own when it is donated.
void Executor::save_old_values(const std::vector<Tensor>& inputs, const std::vector<bool>& donated) const {
  for (const AliasPlan& alias : plan_.aliases) {
    if (alias.write != AliasWrite::copy || input_position_[static_cast<std::size_t>(alias.root)] < 0) continue;
    copy_bytes(arena_at(alias.offset), data_[static_cast<std::size_t>(alias.root)],
               nbytes(graph_.node(alias.root).spec));
  }
  if (donated.empty()) return;
  for (std::size_t k = 0; k < graph_.outputs().size(); ++k) {
    if (alias_of_output_[k] >= 0) continue;
    const ValueId root = plan_.values[static_cast<std::size_t>(graph_.outputs()[k])].root;
    const std::int64_t position = input_position_[static_cast<std::size_t>(root)];
    if (position < 0) continue;
    const auto i = static_cast<std::size_t>(position);
    Tensor& saved = owned_[static_cast<std::size_t>(root)];
    if (!donated[i] || !overwritten_when_donated_[i] || saved.defined()) continue;
    saved = Tensor::empty(inputs[i].shape(), inputs[i].dtype());
    copy_bytes(saved.view().data, inputs[i].raw_data(), inputs[i].nbytes());
  }
}

// Where each output's kernel writes: the donated buffer, or the arena block copied into it at the
// end, for an aliased output whose input is donated; a fresh buffer otherwise.
void Executor::place_outputs(const std::vector<bool>& donated, std::vector<Tensor>* reused) const {
  for (ValueId id : output_roots_) {
    const std::int64_t a = alias_of_root_[static_cast<std::size_t>(id)];
    if (a >= 0 && is_donated(donated, plan_.aliases[static_cast<std::size_t>(a)].input_index)) {
      const AliasPlan& alias = plan_.aliases[static_cast<std::size_t>(a)];
      data_[static_cast<std::size_t>(id)] = alias.write == AliasWrite::direct
                                                ? data_[static_cast<std::size_t>(graph_.inputs()[alias.input_index])]
                                                : static_cast<void*>(arena_at(alias.offset));
      continue;
    }
    const Node& node = graph_.node(id);
    Tensor& out = owned_[static_cast<std::size_t>(id)];
    const std::int64_t k = output_of_root_[static_cast<std::size_t>(id)];
    Tensor given;
    if (reused != nullptr && k >= 0 && static_cast<std::size_t>(k) < reused->size()) {
      given = std::move((*reused)[static_cast<std::size_t>(k)]);
    }
    out = Tensor::empty_or_reused(std::move(given), node.spec.shape, node.spec.dtype);
    data_[static_cast<std::size_t>(id)] = out.view().data;
  }
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
  std::byte* scratch = arena_at(v.scratch_offset);
  for (std::size_t k = 0; k < node.inputs.size(); ++k) {
    const Node& in = graph_.node(node.inputs[k]);
    TensorView view{data_[static_cast<std::size_t>(node.inputs[k])], in.spec.shape, in.spec.dtype};
    if (in.spec.dtype == DType::bfloat16) {
      TensorView wide{scratch, in.spec.shape, DType::float32};
      scratch += aligned_bytes(in.spec.shape.numel() * 4);
      kernels::cpu().convert(view, wide);  // as the eager dispatcher, so results match bit for bit
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
  kernels::cpu().convert(wide_out, out);
}

// After the last kernel: the aliased outputs not written in place yet go into the donated buffer,
// or, when their input was not donated and they have no buffer of their own, into a fresh one.
void Executor::write_aliases(const std::vector<bool>& donated) const {
  for (std::size_t a = 0; a < plan_.aliases.size(); ++a) {
    const AliasPlan& alias = plan_.aliases[a];
    const bool donate = is_donated(donated, alias.input_index);
    const bool copied = alias.write == AliasWrite::copy || (alias.write == AliasWrite::at_end && donate);
    if (!copied) continue;
    const bool saved_input =
        alias.write == AliasWrite::copy && input_position_[static_cast<std::size_t>(alias.root)] >= 0;
    const void* from = saved_input ? arena_at(alias.offset) : data_[static_cast<std::size_t>(alias.root)];
    const TensorSpec& spec = graph_.node(graph_.outputs()[alias.output_index]).spec;
    void* to = data_[static_cast<std::size_t>(graph_.inputs()[alias.input_index])];
    if (!donate) {
      alias_copies_[a] = Tensor::empty(spec.shape, spec.dtype);
      to = alias_copies_[a].view().data;
    }
    copy_bytes(to, from, nbytes(spec));
  }
}

std::vector<Tensor> Executor::collect_outputs(const std::vector<Tensor>& inputs,
                                              const std::vector<bool>& donated) const {
  // The tensor that owns a root value's memory: the caller's input (or its saved old value), the
  // constant, or this run's buffer.
  auto owner = [&](ValueId root) -> const Tensor& {
    const Node& node = graph_.node(root);
    if (node.kind == NodeKind::constant) return node.constant;
    const std::int64_t position = input_position_[static_cast<std::size_t>(root)];
    if (position >= 0 && !owned_[static_cast<std::size_t>(root)].defined()) {
      return inputs[static_cast<std::size_t>(position)];
    }
    return owned_[static_cast<std::size_t>(root)];
  };
  std::vector<Tensor> outputs;
  outputs.reserve(graph_.outputs().size());
  for (std::size_t k = 0; k < graph_.outputs().size(); ++k) {
    const ValueId id = graph_.outputs()[k];
    const TensorSpec& spec = graph_.node(id).spec;
    if (const std::int64_t a = alias_of_output_[k]; a >= 0) {
      const AliasPlan& alias = plan_.aliases[static_cast<std::size_t>(a)];
      if (alias.write != AliasWrite::unchanged && is_donated(donated, alias.input_index)) {
        outputs.push_back(Tensor::from_buffer(inputs[alias.input_index].buffer(), spec.shape, spec.dtype));
        continue;
      }
      if (alias.write == AliasWrite::copy) {
        outputs.push_back(alias_copies_[static_cast<std::size_t>(a)]);
        continue;
      }
    }
    const ValuePlan& v = plan_.values[static_cast<std::size_t>(id)];
    if (v.storage != Storage::view) {
      outputs.push_back(owner(id));
    } else {
      // A view shares its root's buffer, as the eager reshape does.
      outputs.push_back(Tensor::from_buffer(owner(v.root).buffer(), spec.shape, spec.dtype));
    }
  }
  return outputs;
}

}  // namespace kestrel::jit
