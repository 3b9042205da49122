#include "framework/jit/memory_plan.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace kestrel::jit {
namespace {

constexpr auto kAlignment = static_cast<std::int64_t>(Buffer::kAlignment);

std::int64_t raw_bytes(const TensorSpec& spec) {
  return spec.shape.numel() * static_cast<std::int64_t>(size_of(spec.dtype));
}

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (std::int64_t{1} << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (bytes < (std::int64_t{1} << 30)) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

// Float32 scratch for a widened node: a copy of each bfloat16 operand, then the output if it is bfloat16.
std::int64_t widening_bytes(const Graph& graph, const Node& node) {
  std::int64_t bytes = 0;
  for (ValueId in : node.inputs) {
    const TensorSpec& spec = graph.node(in).spec;
    if (spec.dtype == DType::bfloat16) bytes += aligned_bytes(spec.shape.numel() * 4);
  }
  if (node.spec.dtype == DType::bfloat16) bytes += aligned_bytes(node.spec.shape.numel() * 4);
  return bytes;
}

// What plan_memory knows about each value before it places anything.
struct Liveness {
  std::vector<std::int64_t> uses;     // input slots naming the value, views included
  std::vector<std::int64_t> readers;  // per storage root: kernel input slots reading it, through views too
  std::vector<std::vector<ValueId>> dies_at;  // node -> arena roots whose last reader it is
};

void assign_storage(const Graph& graph, MemoryPlan& plan) {
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    v.root = id;
    if (node.kind == NodeKind::input) {
      v.storage = Storage::input;
    } else if (node.kind == NodeKind::constant) {
      v.storage = Storage::constant;
    } else if (node.primitive->is_view()) {
      v.storage = Storage::view;
      v.root = plan.values[static_cast<std::size_t>(node.inputs.at(0))].root;
    } else {
      v.storage = Storage::arena;
    }
    if (v.storage != Storage::view) v.bytes = aligned_bytes(raw_bytes(node.spec));
  }
  // An output's memory leaves with the caller, so it (or the value an output view aliases) cannot be
  // an arena block that the next run overwrites.
  for (ValueId out : graph.outputs()) {
    ValuePlan& root = plan.values[static_cast<std::size_t>(plan.values[static_cast<std::size_t>(out)].root)];
    if (root.storage == Storage::arena) root.storage = Storage::output;
  }
}

Liveness analyze(const Graph& graph, MemoryPlan& plan) {
  const auto n = static_cast<std::size_t>(graph.size());
  Liveness live{std::vector<std::int64_t>(n, 0), std::vector<std::int64_t>(n, 0),
                std::vector<std::vector<ValueId>>(n)};
  for (ValueId id = 0; id < graph.size(); ++id) {
    ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage != Storage::view) v.live_from = v.live_to = id;
  }
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.kind != NodeKind::op) continue;
    const bool kernel = !node.primitive->is_view();
    for (ValueId in : node.inputs) {
      if (in < 0 || in >= id) throw JitError("memory plan: node %" + std::to_string(id) + " reads %" +
                                             std::to_string(in) + ", which does not precede it");
      const ValueId root = plan.values[static_cast<std::size_t>(in)].root;
      ValuePlan& r = plan.values[static_cast<std::size_t>(root)];
      r.live_to = std::max(r.live_to, id);  // through a view, the aliased storage must stay
      ++live.uses[static_cast<std::size_t>(in)];
      if (kernel) ++live.readers[static_cast<std::size_t>(root)];
    }
  }
  for (ValueId id = 0; id < graph.size(); ++id) {
    const ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage == Storage::arena) live.dies_at[static_cast<std::size_t>(v.live_to)].push_back(id);
  }
  return live;
}

// The arena value `id` may overwrite, or -1. Only a single-consumer elementwise kernel qualifies: it
// writes element i after reading element i alone, so sharing the block is safe; anything else
// (broadcast, matmul, ...) may still read an input element after writing the output's.
ValueId in_place_candidate(const Graph& graph, const MemoryPlan& plan, const Liveness& live, ValueId id) {
  const Node& node = graph.node(id);
  if (node.primitive->kind() != OpKind::elementwise) return -1;
  for (ValueId in : node.inputs) {
    const ValueId root = plan.values[static_cast<std::size_t>(in)].root;
    const ValuePlan& r = plan.values[static_cast<std::size_t>(root)];
    const bool sole_reader = live.uses[static_cast<std::size_t>(in)] == 1 &&
                             live.readers[static_cast<std::size_t>(root)] == 1 && r.live_to == id;
    if (r.storage == Storage::arena && sole_reader && raw_bytes(graph.node(in).spec) == raw_bytes(node.spec)) {
      return root;
    }
  }
  return -1;
}

}  // namespace

std::int64_t aligned_bytes(std::int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

bool needs_widening(const Graph& graph, const Node& node) {
  if (node.kind != NodeKind::op || node.primitive->is_view() || node.primitive->handles_bfloat16()) return false;
  bool bf16 = node.spec.dtype == DType::bfloat16;
  for (ValueId in : node.inputs) bf16 |= graph.node(in).spec.dtype == DType::bfloat16;
  return bf16;
}

MemoryPlan plan_memory(const Graph& graph) {
  MemoryPlan plan;
  plan.values.resize(static_cast<std::size_t>(graph.size()));
  assign_storage(graph, plan);
  const Liveness live = analyze(graph, plan);

  ArenaAllocator arena;
  std::vector<bool> handed_on(plan.values.size(), false);  // block now owned by an in-place consumer
  std::int64_t live_bytes = 0;
  for (ValueId id = 0; id < graph.size(); ++id) {
    ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage == Storage::arena) {
      const ValueId source = in_place_candidate(graph, plan, live, id);
      if (source >= 0) {
        v.offset = plan.values[static_cast<std::size_t>(source)].offset;
        v.in_place_of = source;
        handed_on[static_cast<std::size_t>(source)] = true;
        ++plan.in_place_reuses;
      } else {
        v.offset = arena.allocate(v.bytes);
        live_bytes += v.bytes;
      }
    }
    plan.live_peak_bytes = std::max(plan.live_peak_bytes, live_bytes);
    // Scratch is taken after the output and before the inputs are freed, so it overlaps neither.
    if (needs_widening(graph, graph.node(id))) {
      v.scratch_bytes = widening_bytes(graph, graph.node(id));
      v.scratch_offset = arena.allocate(v.scratch_bytes);
      plan.live_peak_bytes = std::max(plan.live_peak_bytes, live_bytes + v.scratch_bytes);
      arena.release(v.scratch_offset, v.scratch_bytes);
      plan.scratch_bytes += v.scratch_bytes;
    }
    for (ValueId dead : live.dies_at[static_cast<std::size_t>(id)]) {
      const ValuePlan& d = plan.values[static_cast<std::size_t>(dead)];
      if (handed_on[static_cast<std::size_t>(dead)]) continue;
      arena.release(d.offset, d.bytes);
      live_bytes -= d.bytes;
    }
  }
  plan.arena_bytes = arena.size();

  for (const ValuePlan& v : plan.values) {
    switch (v.storage) {
      case Storage::arena:
        plan.intermediate_bytes += v.bytes;
        ++plan.num_intermediates;
        break;
      case Storage::output: plan.output_bytes += v.bytes; break;
      case Storage::input:
      case Storage::constant: plan.pinned_bytes += v.bytes; break;
      case Storage::view: break;
    }
  }
  return plan;
}

std::string MemoryPlan::to_string() const {
  const std::int64_t separate = intermediate_bytes + scratch_bytes;
  const double saved_percent = separate > 0 ? 100.0 * static_cast<double>(bytes_saved()) / static_cast<double>(separate) : 0.0;
  std::string out = fmt::format(
      "arena {} for {} intermediates ({} if allocated separately: {} saved, {:.0f}%; {} in place; {} live at most)",
      format_bytes(arena_bytes), num_intermediates, format_bytes(separate), format_bytes(bytes_saved()), saved_percent,
      in_place_reuses, format_bytes(live_peak_bytes));
  if (scratch_bytes > 0) out += fmt::format(", {} of it bfloat16 scratch", format_bytes(scratch_bytes));
  out += fmt::format("; outputs {} per run; inputs and constants {}", format_bytes(output_bytes),
                     format_bytes(pinned_bytes));
  return out;
}

// --- ArenaAllocator ---

std::int64_t ArenaAllocator::allocate(std::int64_t bytes) {
  KESTREL_DCHECK(bytes % kAlignment == 0);
  if (bytes == 0) return 0;  // an empty tensor needs no block; any aligned offset will do
  auto best = by_size_.lower_bound({bytes, std::numeric_limits<std::int64_t>::min()});
  if (best != by_size_.end()) {
    const auto [size, offset] = *best;
    erase_free(by_offset_.find(offset));
    if (size > bytes) insert_free(offset + bytes, size - bytes);
    return offset;
  }
  // Nothing fits: grow. A free block at the end of the arena is extended rather than left stranded.
  if (!by_offset_.empty()) {
    auto last = std::prev(by_offset_.end());
    if (last->first + last->second == end_) {
      const std::int64_t offset = last->first;
      erase_free(last);
      end_ = offset + bytes;
      return offset;
    }
  }
  const std::int64_t offset = end_;
  end_ += bytes;
  return offset;
}

void ArenaAllocator::release(std::int64_t offset, std::int64_t bytes) {
  if (bytes == 0) return;
  KESTREL_DCHECK(offset >= 0 && offset + bytes <= end_);
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && offset + bytes == next->first) {
    bytes += next->second;
    next = std::next(next);
    erase_free(std::prev(next));
  }
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      erase_free(prev);
    }
  }
  insert_free(offset, bytes);
}

void ArenaAllocator::insert_free(std::int64_t offset, std::int64_t bytes) {
  by_offset_.emplace(offset, bytes);
  by_size_.emplace(bytes, offset);
}

void ArenaAllocator::erase_free(std::map<std::int64_t, std::int64_t>::iterator block) {
  by_size_.erase({block->second, block->first});
  by_offset_.erase(block);
}

}  // namespace kestrel::jit
