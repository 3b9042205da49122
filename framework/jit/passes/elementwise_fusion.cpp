#include "framework/jit/passes/elementwise_fusion.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/jit/rewriter.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/primitive.h"

namespace kestrel::jit {
namespace {

using Value = ElementwiseBuilder::Value;

// Ops that join regions without an instruction of their own: casts (a relabelling between the
// floating dtypes and a 0/1 bool, or a rounding to bfloat16), broadcasts (the kernel repeats
// scalars and suffixes itself), and fused programs (inlined). Every other member is an op with a
// fusion_opcode().
bool fuses_without_instruction(OpId id) {
  return id == OpId::cast || id == OpId::broadcast_to || id == OpId::fused_elementwise;
}

bool has_program(const Primitive& primitive) {
  return primitive.fusion_opcode().has_value() || fuses_without_instruction(primitive.id());
}

// Programs compute in float32. A bfloat16 value is carried as the float32 it widens to: each
// bfloat16 member's result is rounded (round_bfloat16) as its own kernel rounds what it stores,
// so the region gives the unfused graph's bits. A bool is carried as 0 or 1, which every
// instruction that can meet one (select's mask, equal) reads correctly.
bool carried(DType dtype) { return is_floating(dtype) || dtype == DType::bool_; }

// Whether node could be a region member, judged on itself alone.
bool fusible(const Graph& graph, const Node& node) {
  if (node.kind != NodeKind::op || !has_program(*node.primitive) || !carried(node.spec.dtype)) return false;
  return std::all_of(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
    const TensorSpec& spec = graph.node(in).spec;
    return carried(spec.dtype) && detail::fused_input_fits(spec.shape, node.spec.shape);
  });
}

bool is_scalar_constant(const Node& node) { return node.kind == NodeKind::constant && node.spec.shape.rank() == 0; }

// Instructions cheap enough to compute again in every region that reads them: float arithmetic,
// min and max, and casts and broadcasts between float values; not the transcendental functions,
// roots and divisions, which cost more than the memory a recomputation saves. (Recomputed values
// are floats read by floats: recomputable() leaves comparisons and selects on a mask from outside
// to the regions as they are.)
bool cheap_to_recompute(const Primitive& primitive) {
  if (primitive.id() == OpId::cast || primitive.id() == OpId::broadcast_to) return true;
  const std::optional<ElementwiseOpcode> opcode = primitive.fusion_opcode();
  if (!opcode) return false;
  switch (*opcode) {
    case ElementwiseOpcode::sqrt:
    case ElementwiseOpcode::rsqrt:
    case ElementwiseOpcode::exp:
    case ElementwiseOpcode::log:
    case ElementwiseOpcode::tanh:
    case ElementwiseOpcode::sigmoid:
    case ElementwiseOpcode::erf:
    case ElementwiseOpcode::gelu:
    case ElementwiseOpcode::gelu_tanh:
    case ElementwiseOpcode::gelu_backprop:
    case ElementwiseOpcode::gelu_tanh_backprop:
    case ElementwiseOpcode::divide: return false;
    default: return true;
  }
}

// region_of_ for a value in no region, and for one every region reading it computes again.
constexpr ValueId kNoRegion = -1;
constexpr ValueId kRecomputed = -2;

// A fused op's program, its inputs standing for `in`.
Value inline_program(ElementwiseBuilder& b, const ElementwiseProgram& program, const std::vector<Value>& in) {
  std::vector<Value> registers;
  registers.reserve(program.instructions().size());
  for (const ElementwiseInstruction& instruction : program.instructions()) {
    if (instruction.opcode == ElementwiseOpcode::input) {
      registers.push_back(in[static_cast<std::size_t>(instruction.args[0])]);
    } else if (instruction.opcode == ElementwiseOpcode::constant) {
      registers.push_back(b.constant(instruction.value));
    } else {
      std::vector<Value> args;
      for (int k = 0; k < opcode_arity(instruction.opcode); ++k) {
        args.push_back(registers[static_cast<std::size_t>(instruction.args[static_cast<std::size_t>(k)])]);
      }
      registers.push_back(b.apply(instruction.opcode, args));
    }
  }
  return registers[static_cast<std::size_t>(program.result())];
}

// The instructions computing node from its operands' registers.
Value emit(ElementwiseBuilder& b, const Graph& graph, const Node& node, const std::vector<Value>& in) {
  if (std::optional<ElementwiseOpcode> opcode = node.primitive->fusion_opcode()) return b.apply(*opcode, in);
  switch (node.primitive->id()) {
    case OpId::cast:
      // A float -> bool is x != 0. Every other carried cast keeps the value: bool -> float is
      // already 0 or 1, bfloat16 -> float32 is exact, and float32 -> bfloat16 is rounded by the
      // caller, as every bfloat16 result is.
      if (node.spec.dtype == DType::bool_ && is_floating(graph.node(node.inputs[0]).spec.dtype)) {
        return b.not_equal(in[0], b.constant(0.0));
      }
      return in[0];
    case OpId::broadcast_to: return in[0];
    case OpId::fused_elementwise: return inline_program(b, *detail::fused_program_of(*node.primitive), in);
    default: break;
  }
  throw JitError("elementwise_fusion: no program for op '" + std::string(node.primitive->name()) + "'");
}

class Fuser {
 public:
  explicit Fuser(const Graph& graph)
      : graph_(graph),
        users_(static_cast<std::size_t>(graph.size())),
        is_output_(static_cast<std::size_t>(graph.size()), false),
        fusible_(static_cast<std::size_t>(graph.size()), false),
        region_of_(static_cast<std::size_t>(graph.size()), kNoRegion) {
    for (ValueId id = 0; id < graph.size(); ++id) {
      for (ValueId in : node(id).inputs) users_[at(in)].push_back(id);
      fusible_[at(id)] = fusible(graph, node(id));
    }
    for (ValueId out : graph.outputs()) is_output_[at(out)] = true;
  }

  // After find_regions: a cheap producer (cheap_to_recompute) with at most one operand of its own
  // size, read only by fusible ops in two regions or more, joins each of them instead of being
  // written once and read back by each. Materialized it costs a write and a read per region, n(1 +
  // R) elements; recomputed, each region reads its one full operand instead, at most nR. A reader
  // left alone by find_regions becomes a region with it. True when any producer was recomputed.
  bool recompute_shared_producers() {
    bool any = false;
    for (ValueId p = graph_.size() - 1; p >= 0; --p) {
      if (!recomputable(p)) continue;
      for (ValueId u : users_[at(p)]) {
        if (region_of_[at(u)] == kNoRegion) {  // a reader that formed no region of its own
          region_of_[at(u)] = u;
          regions_.emplace(u, std::vector<ValueId>{u});
        }
        std::vector<ValueId>& members = regions_.at(region_of_[at(u)]);
        const auto place = std::lower_bound(members.begin(), members.end(), p);
        if (place == members.end() || *place != p) members.insert(place, p);
      }
      region_of_[at(p)] = kRecomputed;
      any = true;
    }
    return any;
  }

  // Forms the regions, from the last op back; true when any has two ops or more.
  bool find_regions() {
    for (ValueId id = graph_.size() - 1; id >= 0; --id) {
      // A region's result leaves it, so it must be a float (not a 0/1 bool).
      if (!fusible_[at(id)] || region_of_[at(id)] >= 0 || !is_floating(node(id).spec.dtype)) continue;
      std::vector<ValueId> members = grow_valid(id);
      if (members.size() < 2) {
        for (ValueId m : members) region_of_[at(m)] = kNoRegion;  // nothing to gain: left as it is
        continue;
      }
      std::sort(members.begin(), members.end());
      regions_.emplace(id, std::move(members));
    }
    return !regions_.empty();
  }

  // The graph with each region replaced by one fused op at its root's place (every input of the
  // region comes before the root, and nothing outside reads the other members).
  Graph rewrite() const {
    GraphRewriter rewriter(graph_);
    for (ValueId id = 0; id < graph_.size(); ++id) {
      const ValueId root = region_of_[at(id)];
      if (root == kRecomputed) continue;  // every reader computes it again
      if (root == kNoRegion) {
        rewriter.copy(id);
      } else if (root == id) {
        const Node& n = node(id);
        auto [program, inputs] = program_of(regions_.at(id), id);
        std::vector<ValueId> mapped;
        std::vector<TensorSpec> specs;
        for (ValueId in : inputs) {
          mapped.push_back(rewriter.mapped(in));
          specs.push_back(node(in).spec);
        }
        auto primitive =
            detail::fused_elementwise_primitive(std::move(program), {.shape = n.spec.shape, .dtype = n.spec.dtype});
        KESTREL_DCHECK(primitive->infer(specs) == n.spec);
        rewriter.bind(id, rewriter.add_op(std::move(primitive), std::move(mapped), n.spec, n.name));
      }
    }
    return rewriter.finish();
  }

 private:
  static std::size_t at(ValueId id) { return static_cast<std::size_t>(id); }
  const Node& node(ValueId id) const { return graph_.node(id); }

  // Whether producer p is recomputed in the regions reading it (recompute_shared_producers).
  bool recomputable(ValueId p) const {
    const Node& n = node(p);
    if (!fusible_[at(p)] || region_of_[at(p)] != kNoRegion || is_output_[at(p)] || !is_floating(n.spec.dtype) ||
        !cheap_to_recompute(*n.primitive)) {
      return false;
    }
    std::vector<ValueId> regions;  // the readers' regions, or the readers that would root one
    for (ValueId u : users_[at(p)]) {
      const ValueId r = region_of_[at(u)] == kNoRegion ? u : region_of_[at(u)];
      if (r < 0 || !fusible_[at(u)] || !is_floating(node(r).spec.dtype)) return false;
      if (n.spec.shape != node(r).spec.shape && n.spec.shape.rank() != 0) return false;
      if (std::find(regions.begin(), regions.end(), r) == regions.end()) regions.push_back(r);
    }
    if (regions.size() < 2) return false;
    int full_operands = 0;
    for (ValueId in : n.inputs) {
      const Node& operand = node(in);
      if (operand.spec.dtype == DType::bool_ && !is_scalar_constant(operand)) return false;  // read as floats
      full_operands += n.spec.shape.rank() > 0 && operand.spec.shape.numel() == n.spec.shape.numel();
    }
    return full_operands <= 1;
  }

  // Whether producer p joins root's region now. Called in decreasing id order, so the users of p
  // (which come after it) are all placed by then.
  bool joins(ValueId p, ValueId root) const {
    if (!fusible_[at(p)] || region_of_[at(p)] >= 0 || is_output_[at(p)]) return false;
    const Shape& shape = node(p).spec.shape;
    if (shape != node(root).spec.shape && shape.rank() != 0) return false;
    const std::vector<ValueId>& users = users_[at(p)];
    return std::all_of(users.begin(), users.end(), [&](ValueId u) { return region_of_[at(u)] == root; });
  }

  std::vector<ValueId> grow(ValueId root) {
    std::vector<ValueId> members{root};
    region_of_[at(root)] = root;
    std::priority_queue<ValueId> candidates;  // highest id first: consumers before producers
    for (ValueId in : node(root).inputs) candidates.push(in);
    while (!candidates.empty()) {
      const ValueId p = candidates.top();
      candidates.pop();
      if (!joins(p, root)) continue;  // also skips a second copy of a producer that joined
      region_of_[at(p)] = root;
      members.push_back(p);
      for (ValueId in : node(p).inputs) candidates.push(in);
    }
    return members;
  }

  // The region grown from root, without members that read a bool from outside it (the kernel
  // reads floats only): those are left unfused and the region is grown again without them.
  std::vector<ValueId> grow_valid(ValueId root) {
    for (;;) {
      std::vector<ValueId> members = grow(root);
      bool valid = true;
      for (ValueId m : members) {
        for (ValueId in : node(m).inputs) {
          const bool outside = region_of_[at(in)] != root;
          if (outside && node(in).spec.dtype == DType::bool_ && !is_scalar_constant(node(in))) {
            fusible_[at(m)] = false;
            valid = false;
          }
        }
      }
      if (valid) return members;
      for (ValueId m : members) region_of_[at(m)] = kNoRegion;
      if (!fusible_[at(root)]) return {};
    }
  }

  // The region's program, and the values its inputs stand for (each once, in order of first use).
  std::pair<ElementwiseProgram, std::vector<ValueId>> program_of(const std::vector<ValueId>& members,
                                                                 ValueId root) const {
    ElementwiseBuilder b;
    std::unordered_map<ValueId, Value> registers;
    std::vector<ValueId> inputs;
    auto operand = [&](ValueId v) -> Value {
      // A member (a recomputed producer among them) is computed before the members reading it.
      if (const auto member = registers.find(v); member != registers.end()) return member->second;
      const Node& n = node(v);
      if (is_scalar_constant(n)) return b.constant(n.constant.to_vector<double>()[0]);
      auto found = std::find(inputs.begin(), inputs.end(), v);
      if (found == inputs.end()) found = inputs.insert(inputs.end(), v);
      return b.input(static_cast<int>(found - inputs.begin()));
    };
    for (ValueId m : members) {
      std::vector<Value> in;
      for (ValueId v : node(m).inputs) in.push_back(operand(v));
      Value value = emit(b, graph_, node(m), in);
      // The root's bfloat16 result is rounded as the kernel stores it.
      if (node(m).spec.dtype == DType::bfloat16 && m != root) value = b.round_bfloat16(value);
      registers.emplace(m, value);
    }
    return {b.build(registers.at(root)), std::move(inputs)};
  }

  const Graph& graph_;
  std::vector<std::vector<ValueId>> users_;  // per value: the ops reading it, once per operand slot
  std::vector<bool> is_output_;
  std::vector<bool> fusible_;
  std::vector<ValueId> region_of_;                             // per value: its region's root, kNoRegion or kRecomputed
  std::unordered_map<ValueId, std::vector<ValueId>> regions_;  // root -> members, ascending
};

}  // namespace

bool ElementwiseFusion::run(Graph& graph) {
  Fuser fuser(graph);
  const bool fused = fuser.find_regions();
  if (!fuser.recompute_shared_producers() && !fused) return false;
  graph = fuser.rewrite();
  return true;
}

}  // namespace kestrel::jit
