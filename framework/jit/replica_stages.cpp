#include "framework/jit/replica_stages.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "framework/core/error.h"
#include "framework/ops/matmul.h"

namespace kestrel::jit {
namespace {

enum class Placement {
  input,       // a graph input: state (shared) or an argument (per replica)
  constant,    // copied into every part that reads it
  copied,      // an op over state and constants only, before any collective: copied likewise
  shared,      // an op over values every replica has alike, after a collective: run once
  replica,     // an op over a replica's own values: run by every replica
  collective,  // performed between stages
  contracted,  // a product over rows (or a reshape or widening of it) that a contraction takes whole
};

bool is_op(const Node& node, OpId id) { return node.kind == NodeKind::op && node.primitive->id() == id; }

bool is_collective(const Node& node) { return is_op(node, OpId::cross_replica_sum) || is_op(node, OpId::all_gather); }

// When a slot is read, in the order things run: part p (2 * stage, +1 for the replica part), the
// collectives ending stage s at 2s + 1 (after its replica part), the program's outputs never.
constexpr int kReadByOutputs = std::numeric_limits<int>::max();

// "%12": how a value crossing into a part is named there, as Graph::to_string names it.
std::string value_name(ValueId v) {
  std::string name = std::to_string(v);
  name.insert(name.begin(), '%');
  return name;
}

class Splitter {
 public:
  Splitter(const Graph& graph, std::size_t num_state, const std::string& function)
      : graph_(graph), num_state_(num_state), function_(function) {}

  ReplicaStages run() {
    place();
    find_contractions();
    parts_.resize(static_cast<std::size_t>(2 * num_stages_));
    collectives_.resize(static_cast<std::size_t>(num_stages_));
    for (ValueId v = 0; v < graph_.size(); ++v) {
      if (placement_[at(v)] == Placement::shared || placement_[at(v)] == Placement::replica) build_op(v);
      if (placement_[at(v)] == Placement::collective) {
        if (contracted_product_[at(v)]) {
          add_contraction(v, *contracted_product_[at(v)]);
        } else {
          add_collective(v);
        }
      }
    }
    for (std::size_t k = 0; k < graph_.outputs().size(); ++k) add_output(k);
    for (std::size_t k = 0; k < graph_.outputs().size(); ++k) alias_in_place(k);
    return assemble();
  }

 private:
  struct Building {
    ReplicaStages::Part part;
    std::unordered_map<ValueId, ValueId> local;  // the traced graph's value -> the part's
  };

  static std::size_t at(ValueId v) { return static_cast<std::size_t>(v); }
  int last_part() const { return 2 * (num_stages_ - 1); }

  // Each value's stage (the collectives on its path) and whether it differs per replica.
  void place() {
    const std::size_t n = at(graph_.size());
    level_.assign(n, 0);
    placement_.assign(n, Placement::input);
    std::vector<bool> varying(n, false);
    slot_of_.assign(n, std::nullopt);
    producer_.assign(n, -1);
    for (std::size_t i = 0; i < graph_.inputs().size(); ++i) {
      const ValueId v = graph_.inputs()[i];
      varying[at(v)] = i >= num_state_;
      slot_of_[at(v)] = new_slot(varying[at(v)]);
    }
    for (ValueId v = 0; v < graph_.size(); ++v) {
      const Node& node = graph_.node(v);
      if (node.kind == NodeKind::input) continue;
      if (node.kind == NodeKind::constant) {
        placement_[at(v)] = Placement::constant;
        continue;
      }
      for (ValueId in : node.inputs) {
        level_[at(v)] = std::max(level_[at(v)], level_[at(in)]);
        if (varying[at(in)]) varying[at(v)] = true;
      }
      if (is_collective(node)) {
        ++level_[at(v)];
        varying[at(v)] = false;
        placement_[at(v)] = Placement::collective;
      } else if (varying[at(v)]) {
        placement_[at(v)] = Placement::replica;
      } else {
        placement_[at(v)] = level_[at(v)] > 0 ? Placement::shared : Placement::copied;
      }
      num_stages_ = std::max(num_stages_, level_[at(v)] + 1);
    }
  }

  // The sums of a product over the replicas' own rows: cross_replica_sum(reshape*(matmul(a, b))),
  // a^T b, where nothing else reads the product, becomes a contraction of a's and b's slots; one
  // cast from bfloat16 to float32 may sit among the reshapes.
  void find_contractions() {
    const std::size_t n = at(graph_.size());
    std::vector<int> readers(n, 0);
    for (ValueId v = 0; v < graph_.size(); ++v) {
      for (ValueId in : graph_.node(v).inputs) ++readers[at(in)];
    }
    for (ValueId out : graph_.outputs()) ++readers[at(out)];
    contracted_product_.assign(n, std::nullopt);
    for (ValueId v = 0; v < graph_.size(); ++v) {
      if (!is_op(graph_.node(v), OpId::cross_replica_sum)) continue;
      std::vector<ValueId> taken;
      ValueId product = graph_.node(v).inputs[0];
      bool widened = false;
      while (readers[at(product)] == 1) {
        const Node& node = graph_.node(product);
        const bool widening = !widened && is_op(node, OpId::cast) && node.spec.dtype == DType::float32 &&
                              graph_.node(node.inputs[0]).spec.dtype == DType::bfloat16;
        if (!widening && !is_op(node, OpId::reshape)) break;
        widened = widened || widening;
        taken.push_back(product);
        product = node.inputs[0];
      }
      if (!is_contractible(product) || readers[at(product)] != 1) continue;
      taken.push_back(product);
      for (ValueId t : taken) placement_[at(t)] = Placement::contracted;
      contracted_product_[at(v)] = product;
    }
  }

  // a^T b over two matrices of the replica's own, with no bias.
  bool is_contractible(ValueId product) const {
    const Node& node = graph_.node(product);
    if (node.kind != NodeKind::op || placement_[at(product)] != Placement::replica || node.inputs.size() != 2 ||
        !kestrel::detail::is_product_over_rows(*node.primitive)) {
      return false;
    }
    for (ValueId in : node.inputs) {
      const ValueId from = reshaped_from(in);
      const Placement p = placement_[at(from)];
      const bool own =
          p == Placement::replica || (p == Placement::input && slots_.slot_per_replica[*slot_of_[at(from)]]);
      if (!own || graph_.node(in).spec.shape.rank() != 2) return false;
    }
    return true;
  }

  std::size_t new_slot(bool per_replica) {
    slots_.slot_per_replica.push_back(per_replica);
    last_reader_.push_back(-1);
    exported_from_.push_back(-1);
    return slots_.slot_per_replica.size() - 1;
  }

  void note_read(std::size_t slot, int when) { last_reader_[slot] = std::max(last_reader_[slot], when); }

  // The part's value for a value of the traced graph: copied in, or an input from its slot.
  ValueId materialize(int p, ValueId v) {
    Building& b = parts_[static_cast<std::size_t>(p)];
    if (auto found = b.local.find(v); found != b.local.end()) return found->second;
    const Node& node = graph_.node(v);
    ValueId local = -1;
    if (placement_[at(v)] == Placement::constant) {
      local = b.part.graph.add_constant(node.constant);
    } else if (placement_[at(v)] == Placement::copied) {
      std::vector<ValueId> inputs;
      for (ValueId in : node.inputs) inputs.push_back(materialize(p, in));
      local = b.part.graph.add_op(node.primitive, std::move(inputs), node.spec, node.name);
    } else {
      KESTREL_DCHECK(producer_[at(v)] != p);  // a part's own ops are built in graph order
      const std::size_t slot = slot_for(v, -1);
      local = b.part.graph.add_input(node.spec, node.kind == NodeKind::input ? node.name : value_name(v));
      b.part.input_slots.push_back(slot);
      note_read(slot, p);
    }
    b.local.emplace(v, local);
    return local;
  }

  // The slot holding v, made the producing part's output on first use. A value every part
  // copies (`copied`, `constant`) is computed in part `fallback` for the occasion.
  std::size_t slot_for(ValueId v, int fallback) {
    if (slot_of_[at(v)]) return *slot_of_[at(v)];
    int p = producer_[at(v)];
    if (p < 0) {
      KESTREL_DCHECK(fallback >= 0);
      p = fallback;
    }
    Building& b = parts_[static_cast<std::size_t>(p)];
    const ValueId local = materialize(p, v);
    const std::size_t slot = new_slot(b.part.per_replica);
    b.part.graph.add_output(local);
    b.part.output_slots.push_back(slot);
    exported_from_[slot] = p;
    slot_of_[at(v)] = slot;
    return slot;
  }

  void build_op(ValueId v) {
    const Node& node = graph_.node(v);
    const bool per_replica = placement_[at(v)] == Placement::replica;
    const int p = 2 * level_[at(v)] + (per_replica ? 1 : 0);
    parts_[static_cast<std::size_t>(p)].part.per_replica = per_replica;
    std::vector<ValueId> inputs;
    for (ValueId in : node.inputs) inputs.push_back(materialize(p, in));
    Building& b = parts_[static_cast<std::size_t>(p)];
    b.local.emplace(v, b.part.graph.add_op(node.primitive, std::move(inputs), node.spec, node.name));
    producer_[at(v)] = p;
  }

  void add_collective(ValueId v) {
    const Node& node = graph_.node(v);
    const int stage = level_[at(v)] - 1;  // the stage it ends
    const std::size_t input = slot_for(node.inputs[0], 2 * stage);
    note_read(input, 2 * stage + 1);
    const std::size_t output = new_slot(false);
    slot_of_[at(v)] = output;
    collectives_[static_cast<std::size_t>(stage)].push_back(
        {.op = node.primitive->id(), .input_slot = input, .output_slot = output});
  }

  // The value a reshape chain ends at: the slot to export, whose bytes are the operand's in the
  // same order (a layer's [batch, tokens, d] input, read by its three projections' gradients as
  // [rows, d], is one slot, not three).
  ValueId reshaped_from(ValueId v) const {
    while (is_op(graph_.node(v), OpId::reshape)) v = graph_.node(v).inputs[0];
    return v;
  }

  void add_contraction(ValueId v, ValueId product) {
    const Node& node = graph_.node(product);
    const int stage = level_[at(v)] - 1;
    const std::size_t a = slot_for(reshaped_from(node.inputs[0]), 2 * stage);
    const std::size_t b = slot_for(reshaped_from(node.inputs[1]), 2 * stage);
    note_read(a, 2 * stage + 1);
    note_read(b, 2 * stage + 1);
    const std::size_t output = new_slot(false);
    slot_of_[at(v)] = output;
    collectives_[static_cast<std::size_t>(stage)].push_back(
        {.op = OpId::cross_replica_sum,
         .output_slot = output,
         .contraction = ReplicaStages::Contraction{.a_slot = a,
                                                   .b_slot = b,
                                                   .a = graph_.node(node.inputs[0]).spec,
                                                   .b = graph_.node(node.inputs[1]).spec,
                                                   .product = {node.spec.shape, graph_.node(v).spec.dtype},
                                                   .sum_shape = graph_.node(v).spec.shape}});
  }

  void add_output(std::size_t k) {
    const std::size_t slot = slot_for(graph_.outputs()[k], last_part());
    note_read(slot, kReadByOutputs);
    slots_.output_slots.push_back(slot);
    const std::optional<std::size_t> state = graph_.output_alias(k);
    if (state && slots_.slot_per_replica[slot]) {
      throw JitError("'" + function_ + "' gives variable '" + graph_.node(graph_.inputs()[*state]).name +
                     "' a new value computed from one replica's own values, so every replica would give it "
                     "another; variables every replica shares change at merge points, from every replica's values "
                     "(optimizer.apply, or distribute::merge_call)");
    }
  }

  // A variable's new value takes its old buffer when its part is the last to read the old one.
  void alias_in_place(std::size_t k) {
    const std::optional<std::size_t> state = graph_.output_alias(k);
    if (!state) return;
    const std::size_t slot = slots_.output_slots[k];
    const int p = exported_from_[slot];
    if (p < 0 || last_reader_[*state] > p) return;
    Graph& part = parts_[static_cast<std::size_t>(p)].part.graph;
    const std::vector<std::size_t>& outputs = parts_[static_cast<std::size_t>(p)].part.output_slots;
    const auto output = static_cast<std::size_t>(std::find(outputs.begin(), outputs.end(), slot) - outputs.begin());
    const ValueId input = materialize(p, graph_.inputs()[*state]);
    const auto position =
        static_cast<std::size_t>(std::find(part.inputs().begin(), part.inputs().end(), input) - part.inputs().begin());
    if (part.output_alias(output)) return;  // one value given to two variables: the first takes it
    for (const std::optional<std::size_t>& alias : part.output_aliases()) {
      if (alias == position) return;
    }
    part.alias_output(output, position);
  }

  ReplicaStages assemble() {
    ReplicaStages out = std::move(slots_);
    std::vector<std::optional<std::size_t>> index(parts_.size());
    for (std::size_t p = 0; p < parts_.size(); ++p) {
      if (parts_[p].part.output_slots.empty()) continue;  // nothing reads it
      index[p] = out.parts.size();
      out.parts.push_back(std::move(parts_[p].part));
    }
    for (int s = 0; s < num_stages_; ++s) {
      ReplicaStages::Stage stage;
      stage.shared_part = index[static_cast<std::size_t>(2 * s)];
      stage.replica_part = index[static_cast<std::size_t>(2 * s + 1)];
      stage.collectives = std::move(collectives_[static_cast<std::size_t>(s)]);
      for (std::size_t slot = 0; slot < last_reader_.size(); ++slot) {
        if (last_reader_[slot] != kReadByOutputs && std::max(last_reader_[slot], 0) / 2 == s) {
          stage.released_slots.push_back(slot);
        }
      }
      out.stages.push_back(std::move(stage));
    }
    return out;
  }

  const Graph& graph_;
  std::size_t num_state_;
  const std::string& function_;
  int num_stages_ = 1;
  std::vector<int> level_;
  std::vector<Placement> placement_;
  std::vector<std::optional<std::size_t>> slot_of_;         // per value: the slot holding it, once it has one
  std::vector<int> producer_;                               // per value: the part computing it (shared, replica)
  std::vector<std::optional<ValueId>> contracted_product_;  // per cross_replica_sum: the product it contracts
  std::vector<Building> parts_;                             // 2 per stage: [2s] shared, [2s + 1] replica
  std::vector<std::vector<ReplicaStages::Collective>> collectives_;  // per stage
  ReplicaStages slots_;                                              // being filled: the slots and the outputs' slots
  std::vector<int> last_reader_;                                     // per slot (see kReadByOutputs)
  std::vector<int> exported_from_;                                   // per slot: the part whose output it is, or -1
};

// One replica: nothing to meet, so nothing to split; the graph keeps its own aliases.
ReplicaStages one_part(const Graph& graph, std::size_t num_state) {
  ReplicaStages out;
  ReplicaStages::Part part{.graph = graph, .per_replica = true};
  for (std::size_t i = 0; i < graph.inputs().size(); ++i) {
    out.slot_per_replica.push_back(i >= num_state);
    part.input_slots.push_back(i);
  }
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    out.slot_per_replica.push_back(true);
    part.output_slots.push_back(out.slot_per_replica.size() - 1);
  }
  out.output_slots = part.output_slots;
  out.parts.push_back(std::move(part));
  out.stages.push_back({.replica_part = 0});
  return out;
}

}  // namespace

std::int64_t ReplicaStages::num_ops() const {
  std::int64_t total = 0;
  for (const Part& part : parts) total += part.graph.num_ops();
  for (const Stage& stage : stages) total += static_cast<std::int64_t>(stage.collectives.size());
  return total;
}

std::string ReplicaStages::to_string() const {
  std::string out;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const Stage& stage = stages[s];
    out += (s == 0 ? "stage " : "; stage ") + std::to_string(s) + ":";
    std::string parts_text;
    for (const std::optional<std::size_t>& part : {stage.shared_part, stage.replica_part}) {
      if (!part) continue;
      parts_text += std::string(parts_text.empty() ? " " : ", ") + (parts[*part].per_replica ? "replica" : "shared") +
                    " part (" + std::to_string(parts[*part].graph.num_ops()) + " ops)";
    }
    out += parts_text.empty() ? " nothing" : parts_text;
    std::int64_t sums = 0, gathers = 0, contractions = 0;
    for (const Collective& c : stage.collectives) {
      (c.op == OpId::all_gather ? gathers : sums) += 1;
      if (c.contraction) ++contractions;
    }
    if (sums > 0) out += " -> cross_replica_sum x" + std::to_string(sums);
    if (contractions > 0) out += " (" + std::to_string(contractions) + " as products over every replica's rows)";
    if (gathers > 0) out += std::string(sums > 0 ? ", " : " -> ") + "all_gather x" + std::to_string(gathers);
  }
  return out;
}

ReplicaStages split_at_collectives(const Graph& graph, std::size_t num_state, int replicas,
                                   const std::string& function) {
  if (replicas == 1) return one_part(graph, num_state);
  return Splitter(graph, num_state, function).run();
}

}  // namespace kestrel::jit
