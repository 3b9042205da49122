#include "framework/jit/memory_plan.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "framework/core/error.h"

namespace kestrel::jit {
namespace {

constexpr auto kAlignment = static_cast<std::int64_t>(Buffer::kAlignment);

std::int64_t raw_bytes(const TensorSpec& spec) {
  return spec.shape.numel() * static_cast<std::int64_t>(size_of(spec.dtype));
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
  std::vector<std::int64_t> uses;             // input slots naming the value, views included
  std::vector<std::int64_t> readers;          // per storage root: kernel input slots reading it, through views too
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
  // an arena block that the next run overwrites. The exception: a value that only aliased outputs
  // share (two state variables given one new value) is copied into each one's own buffer after the
  // last kernel, so it can stay in the arena, alive until then.
  std::vector<int> outputs_of(plan.values.size(), 0);
  std::vector<bool> plain_output(plan.values.size(), false);
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    const auto root = static_cast<std::size_t>(plan.values[static_cast<std::size_t>(graph.outputs()[k])].root);
    ++outputs_of[root];
    if (!graph.output_alias(k)) plain_output[root] = true;
  }
  for (std::size_t root = 0; root < plan.values.size(); ++root) {
    ValuePlan& v = plan.values[root];
    if (v.storage == Storage::arena && (plain_output[root] || outputs_of[root] == 1)) v.storage = Storage::output;
  }
}

Liveness analyze(const Graph& graph, MemoryPlan& plan) {
  const auto n = static_cast<std::size_t>(graph.size());
  Liveness live{std::vector<std::int64_t>(n, 0), std::vector<std::int64_t>(n, 0), std::vector<std::vector<ValueId>>(n)};
  for (ValueId id = 0; id < graph.size(); ++id) {
    ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage != Storage::view) v.live_from = v.live_to = id;
  }
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    if (node.kind != NodeKind::op) continue;
    const bool kernel = !node.primitive->is_view();
    for (ValueId in : node.inputs) {
      if (in < 0 || in >= id)
        throw JitError("memory plan: node %" + std::to_string(id) + " reads %" + std::to_string(in) +
                       ", which does not precede it");
      const ValueId root = plan.values[static_cast<std::size_t>(in)].root;
      ValuePlan& r = plan.values[static_cast<std::size_t>(root)];
      r.live_to = std::max(r.live_to, id);  // through a view, the aliased storage must stay
      ++live.uses[static_cast<std::size_t>(in)];
      if (kernel) ++live.readers[static_cast<std::size_t>(root)];
    }
  }
  // An output root still in the arena is copied into donated buffers after the last node.
  for (ValueId out : graph.outputs()) {
    ValuePlan& root = plan.values[static_cast<std::size_t>(plan.values[static_cast<std::size_t>(out)].root)];
    if (root.storage == Storage::arena) root.live_to = graph.size();
  }
  for (ValueId id = 0; id < graph.size(); ++id) {
    const ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage == Storage::arena && v.live_to < graph.size()) {
      live.dies_at[static_cast<std::size_t>(v.live_to)].push_back(id);
    }
  }
  return live;
}

// True when node `id` may write its output over `input`'s memory while it reads it: an elementwise
// kernel (one op, or a fused program) reads element i of a full-sized operand before it writes
// element i, and nothing else. Broadcasting kernels and the rest may read an element again later.
// The one rule for both ways a value is overwritten: in place of a dying intermediate, and into a
// donated input.
bool writes_where_it_reads(const Graph& graph, const MemoryPlan& plan, ValueId id, ValueId input) {
  const Node& node = graph.node(id);
  const bool elementwise =
      node.primitive->kind() == OpKind::elementwise || node.primitive->id() == OpId::fused_elementwise;
  if (!elementwise) return false;
  return std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
    return plan.values[static_cast<std::size_t>(in)].root != input ||
           raw_bytes(graph.node(in).spec) == raw_bytes(node.spec);
  });
}

// The arena value `id` may overwrite, or -1: the block of an input that dies at `id` and that no
// other node reads, where `id` writes where it reads.
ValueId in_place_candidate(const Graph& graph, const MemoryPlan& plan, const Liveness& live, ValueId id) {
  for (ValueId in : graph.node(id).inputs) {
    const ValueId root = plan.values[static_cast<std::size_t>(in)].root;
    const ValuePlan& r = plan.values[static_cast<std::size_t>(root)];
    const bool sole_reader = live.uses[static_cast<std::size_t>(in)] == 1 &&
                             live.readers[static_cast<std::size_t>(root)] == 1 && r.live_to == id;
    if (r.storage == Storage::arena && sole_reader && writes_where_it_reads(graph, plan, id, root)) return root;
  }
  return -1;
}

// How each aliased output reaches its input's buffer (offsets are placed later). A value that is
// the root of this output alone is written where the donated buffer is: directly when every other
// reader of the input has run by then, else at the end.
std::vector<AliasPlan> plan_aliases(const Graph& graph, const MemoryPlan& plan) {
  std::vector<int> outputs_of(plan.values.size(), 0);
  for (ValueId out : graph.outputs())
    ++outputs_of[static_cast<std::size_t>(plan.values[static_cast<std::size_t>(out)].root)];
  std::vector<AliasPlan> aliases;
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    const std::optional<std::size_t> input_index = graph.output_alias(k);
    if (!input_index) continue;
    if (*input_index >= graph.inputs().size()) {
      throw JitError("memory plan: output " + std::to_string(k) + " is aliased to input " +
                     std::to_string(*input_index) + ", which does not exist; run Graph::verify first");
    }
    AliasPlan a{.output_index = k,
                .input_index = *input_index,
                .root = plan.values[static_cast<std::size_t>(graph.outputs()[k])].root};
    const ValueId input = graph.inputs()[*input_index];
    const ValuePlan& root = plan.values[static_cast<std::size_t>(a.root)];
    if (a.root == input) {
      a.write = AliasWrite::unchanged;
    } else if (root.storage == Storage::output && outputs_of[static_cast<std::size_t>(a.root)] == 1) {
      const std::int64_t last_read = plan.values[static_cast<std::size_t>(input)].live_to;  // itself if unread
      const bool direct = last_read == input || last_read < a.root ||
                          (last_read == a.root && writes_where_it_reads(graph, plan, a.root, input));
      a.write = direct ? AliasWrite::direct : AliasWrite::at_end;
    } else {
      a.write = AliasWrite::copy;
    }
    aliases.push_back(a);
  }
  return aliases;
}

}  // namespace

std::string_view to_string(AliasWrite write) {
  switch (write) {
    case AliasWrite::unchanged: return "unchanged";
    case AliasWrite::direct: return "direct";
    case AliasWrite::at_end: return "at_end";
    case AliasWrite::copy: return "copy";
  }
  return "copy";
}

std::int64_t MemoryPlan::num_aliases(AliasWrite write) const {
  return std::count_if(aliases.begin(), aliases.end(), [&](const AliasPlan& a) { return a.write == write; });
}

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
  plan.aliases = plan_aliases(graph, plan);

  ArenaAllocator arena;
  std::vector<bool> handed_on(plan.values.size(), false);  // block now owned by an in-place consumer
  std::int64_t live_bytes = 0;
  BytesByDtype live_by_dtype;
  auto dtype_of = [&](ValueId id) { return graph.node(id).spec.dtype; };
  // Keeps the peak and what it is made of; `scratch` float32 bytes are live on top for one node.
  auto note_peak = [&](std::int64_t scratch) {
    if (live_bytes + scratch <= plan.live_peak_bytes) return;
    plan.live_peak_bytes = live_bytes + scratch;
    plan.live_peak_by_dtype = live_by_dtype;
    if (scratch > 0) plan.live_peak_by_dtype[DType::float32] += scratch;
  };
  // Blocks held from their first use to the end of the run: an input a copied alias reads is saved
  // before any kernel runs (a donated run may overwrite it); an at_end value, from its node on.
  std::vector<AliasPlan*> at_end_of(plan.values.size(), nullptr);
  for (AliasPlan& a : plan.aliases) {
    const ValuePlan& root = plan.values[static_cast<std::size_t>(a.root)];
    if (a.write != AliasWrite::unchanged) plan.donated_bytes += root.bytes;
    if (a.write == AliasWrite::at_end) at_end_of[static_cast<std::size_t>(a.root)] = &a;
    if (a.write == AliasWrite::copy && root.storage == Storage::input) {
      a.offset = arena.allocate(root.bytes);
      live_bytes += root.bytes;
      live_by_dtype[dtype_of(a.root)] += root.bytes;
    }
  }
  for (ValueId id = 0; id < graph.size(); ++id) {
    ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
    if (v.storage == Storage::arena) {
      const ValueId source = in_place_candidate(graph, plan, live, id);
      if (source >= 0) {
        v.offset = plan.values[static_cast<std::size_t>(source)].offset;
        v.in_place_of = source;
        handed_on[static_cast<std::size_t>(source)] = true;
        ++plan.in_place_reuses;
        // The block changes hands, and may change dtype (a comparison's bool over its float input).
        live_by_dtype[dtype_of(source)] -= v.bytes;
        live_by_dtype[dtype_of(id)] += v.bytes;
      } else {
        v.offset = arena.allocate(v.bytes);
        live_bytes += v.bytes;
        live_by_dtype[dtype_of(id)] += v.bytes;
      }
    }
    if (AliasPlan* a = at_end_of[static_cast<std::size_t>(id)]) {
      a->offset = arena.allocate(v.bytes);
      live_bytes += v.bytes;
      live_by_dtype[dtype_of(id)] += v.bytes;
    }
    note_peak(0);
    // Scratch is taken after the output and before the inputs are freed, so it overlaps neither.
    if (needs_widening(graph, graph.node(id))) {
      v.scratch_bytes = widening_bytes(graph, graph.node(id));
      v.scratch_offset = arena.allocate(v.scratch_bytes);
      note_peak(v.scratch_bytes);
      arena.release(v.scratch_offset, v.scratch_bytes);
      plan.scratch_bytes += v.scratch_bytes;
    }
    for (ValueId dead : live.dies_at[static_cast<std::size_t>(id)]) {
      const ValuePlan& d = plan.values[static_cast<std::size_t>(dead)];
      if (handed_on[static_cast<std::size_t>(dead)]) continue;
      arena.release(d.offset, d.bytes);
      live_bytes -= d.bytes;
      live_by_dtype[dtype_of(dead)] -= d.bytes;
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
  // Blocks held for donated buffers would be allocations of their own too.
  for (const AliasPlan& a : plan.aliases) {
    if (a.offset >= 0) plan.intermediate_bytes += plan.values[static_cast<std::size_t>(a.root)].bytes;
  }
  return plan;
}

std::string MemoryPlan::to_string() const {
  const std::int64_t separate = intermediate_bytes + scratch_bytes;
  const double saved_percent =
      separate > 0 ? 100.0 * static_cast<double>(bytes_saved()) / static_cast<double>(separate) : 0.0;
  std::string out = fmt::format(
      "arena {} for {} intermediates ({} if allocated separately: {} saved, {:.0f}%; {} in place; {} live at most)",
      format_bytes(arena_bytes), num_intermediates, format_bytes(separate), format_bytes(bytes_saved()), saved_percent,
      in_place_reuses, format_bytes(live_peak_bytes));
  const std::string by_dtype = format_bytes(live_peak_by_dtype);
  if (by_dtype.find(" + ") != std::string::npos) out += " (" + by_dtype + ")";
  // Each op's widening scratch is freed as the op ends, so the arena holds one op's at a time.
  if (scratch_bytes > 0) {
    out += fmt::format(", {} of bfloat16 widened to float32 over all its ops", format_bytes(scratch_bytes));
  }
  out += fmt::format("; outputs {} per run; inputs and constants {}", format_bytes(output_bytes),
                     format_bytes(pinned_bytes));
  if (!aliases.empty()) {
    out +=
        fmt::format("; {} aliased outputs, {} into donated buffers ({} direct, {} at the end, {} copied, {} unchanged)",
                    aliases.size(), format_bytes(donated_bytes), num_aliases(AliasWrite::direct),
                    num_aliases(AliasWrite::at_end), num_aliases(AliasWrite::copy), num_aliases(AliasWrite::unchanged));
  }
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

std::string format_bytes(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (std::int64_t{1} << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (bytes < (std::int64_t{1} << 30)) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
}

std::int64_t total_bytes(const BytesByDtype& bytes) {
  std::int64_t total = 0;
  for (const auto& [dtype, n] : bytes) total += n;
  return total;
}

std::string format_bytes(const BytesByDtype& bytes) {
  std::vector<std::pair<std::int64_t, DType>> largest_first;
  for (const auto& [dtype, n] : bytes) {
    if (n > 0) largest_first.emplace_back(n, dtype);
  }
  std::sort(largest_first.rbegin(), largest_first.rend());
  std::string out;
  for (const auto& [n, dtype] : largest_first)
    out += (out.empty() ? "" : " + ") + format_bytes(n) + " " + std::string(to_string(dtype));
  return out.empty() ? "0 B" : out;
}

}  // namespace kestrel::jit
