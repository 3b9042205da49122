#include "framework/jit/graph.h"

#include <sstream>

#include "framework/core/error.h"

namespace kestrel::jit {
namespace {

std::string describe_output(const Graph& g, std::size_t index) {
  std::string out = "output " + std::to_string(index);
  if (index >= g.outputs().size()) return out + " (the graph has " + std::to_string(g.outputs().size()) + " outputs)";
  const ValueId id = g.outputs()[index];
  out += " (%" + std::to_string(id);
  if (id >= 0 && id < g.size()) out += " : " + g.node(id).spec.to_string();
  return out + ")";
}

std::string describe_input(const Graph& g, std::size_t index) {
  std::string out = "input " + std::to_string(index);
  if (index >= g.inputs().size()) return out + " (the graph has " + std::to_string(g.inputs().size()) + " inputs)";
  const ValueId id = g.inputs()[index];
  const Node& n = g.node(id);
  return out + " '" + n.name + "' (%" + std::to_string(id) + " : " + n.spec.to_string() + ")";
}

// What stops output `output_index` from being input `input_index`'s new value, or "" when
// nothing does: both must exist, with one spec, so the output fits the input's buffer.
std::string alias_problem(const Graph& g, std::size_t output_index, std::size_t input_index) {
  const std::string pair = describe_output(g, output_index) + " as the new value of " + describe_input(g, input_index);
  if (output_index >= g.outputs().size() || input_index >= g.inputs().size()) {
    return pair + ": no such " + (output_index >= g.outputs().size() ? "output" : "input") +
           "; alias by position, after add_output";
  }
  const ValueId output = g.outputs()[output_index];
  if (output < 0 || output >= g.size()) return pair + ": the output value does not exist";
  if (g.node(output).spec != g.node(g.inputs()[input_index]).spec) {
    return pair + ": the specs differ; a new value keeps its input's shape and dtype (reshape or cast it)";
  }
  return "";
}

}  // namespace

ValueId Graph::add_input(const TensorSpec& spec, std::string name) {
  nodes_.push_back(Node{.kind = NodeKind::input, .spec = spec, .name = std::move(name)});
  inputs_.push_back(size() - 1);
  return size() - 1;
}

ValueId Graph::add_constant(const Tensor& value) {
  nodes_.push_back(Node{.kind = NodeKind::constant, .spec = value.spec(), .constant = value});
  return size() - 1;
}

ValueId Graph::add_op(std::shared_ptr<const Primitive> primitive, std::vector<ValueId> inputs, const TensorSpec& spec,
                      std::string scope) {
  for ([[maybe_unused]] ValueId in : inputs) KESTREL_DCHECK(in >= 0 && in < size());
  nodes_.push_back(Node{.kind = NodeKind::op,
                        .primitive = std::move(primitive),
                        .inputs = std::move(inputs),
                        .spec = spec,
                        .name = std::move(scope)});
  return size() - 1;
}

void Graph::alias_output(std::size_t output_index, std::size_t input_index) {
  if (std::string problem = alias_problem(*this, output_index, input_index); !problem.empty()) {
    throw JitError("graph alias: " + problem);
  }
  std::optional<std::size_t>& alias = output_aliases_[output_index];
  if (alias == input_index) return;
  if (alias) {
    throw JitError("graph alias: " + describe_output(*this, output_index) + " as the new value of " +
                   describe_input(*this, input_index) + ": it is already the new value of " +
                   describe_input(*this, *alias) + "; an output updates one input");
  }
  for (std::size_t k = 0; k < output_aliases_.size(); ++k) {
    if (output_aliases_[k] != input_index) continue;
    throw JitError("graph alias: " + describe_output(*this, output_index) + " as the new value of " +
                   describe_input(*this, input_index) + ": " + describe_output(*this, k) +
                   " already is; an input has one new value");
  }
  alias = input_index;
}

std::int64_t Graph::num_ops() const {
  std::int64_t n = 0;
  for (const Node& node : nodes_) n += node.kind == NodeKind::op;
  return n;
}

bool Graph::is_op(ValueId id, OpId op) const {
  const Node& n = node(id);
  return n.kind == NodeKind::op && n.primitive->id() == op;
}

std::vector<int> Graph::reader_counts() const {
  std::vector<int> readers(nodes_.size(), 0);
  for (const Node& n : nodes_) {
    for (ValueId in : n.inputs) ++readers[static_cast<std::size_t>(in)];
  }
  for (ValueId out : outputs_) ++readers[static_cast<std::size_t>(out)];
  return readers;
}

void Graph::verify() const {
  auto fail = [](ValueId id, const std::string& what) {
    throw JitError("graph verification: %" + std::to_string(id) + " " + what);
  };
  for (ValueId id = 0; id < size(); ++id) {
    const Node& n = node(id);
    if (n.kind != NodeKind::op) continue;
    if (!n.primitive) fail(id, "is an op without a primitive");
    std::vector<TensorSpec> specs;
    for (ValueId in : n.inputs) {
      if (in < 0 || in >= id) fail(id, "uses %" + std::to_string(in) + ", which does not come before it");
      specs.push_back(node(in).spec);
    }
    const TensorSpec inferred = n.primitive->infer(specs);
    if (inferred != n.spec) {
      std::ostringstream what;
      what << '(' << n.primitive->name() << ") has spec " << n.spec.to_string() << " but its inputs give "
           << inferred.to_string();
      fail(id, what.str());
    }
  }
  for (ValueId out : outputs_) {
    if (out < 0 || out >= size()) fail(out, "is an output that does not exist");
  }
  if (output_aliases_.size() != outputs_.size()) {
    throw JitError("graph verification: " + std::to_string(output_aliases_.size()) + " output aliases for " +
                   std::to_string(outputs_.size()) + " outputs; add outputs with add_output");
  }
  std::vector<std::optional<std::size_t>> updated_by(inputs_.size());  // per input: the output aliased to it
  for (std::size_t k = 0; k < outputs_.size(); ++k) {
    if (!output_aliases_[k]) continue;
    const std::size_t input_index = *output_aliases_[k];
    if (std::string problem = alias_problem(*this, k, input_index); !problem.empty()) {
      throw JitError("graph verification: " + problem);
    }
    if (updated_by[input_index]) {
      throw JitError("graph verification: " + describe_output(*this, *updated_by[input_index]) + " and " +
                     describe_output(*this, k) + " are both the new value of " + describe_input(*this, input_index) +
                     "; an input has one new value");
    }
    updated_by[input_index] = k;
  }
}

std::string Graph::to_string() const {
  std::ostringstream out;
  for (ValueId id = 0; id < size(); ++id) {
    const Node& n = node(id);
    out << '%' << id << " = ";
    switch (n.kind) {
      case NodeKind::input: out << "input '" << n.name << "'"; break;
      case NodeKind::constant:
        out << "constant";
        if (n.spec.shape.numel() == 1) out << ' ' << n.constant.to_vector<double>()[0];
        break;
      case NodeKind::op: {
        out << n.primitive->name() << '(';
        for (std::size_t i = 0; i < n.inputs.size(); ++i) out << (i ? ", %" : "%") << n.inputs[i];
        out << ')';
        const std::string params = n.primitive->params();
        if (!params.empty()) out << " {" << params << '}';
        break;
      }
    }
    out << " : " << n.spec.to_string();
    if (n.kind == NodeKind::op && !n.name.empty()) out << "   # " << n.name;
    out << '\n';
  }
  out << "outputs:";
  for (std::size_t k = 0; k < outputs_.size(); ++k) {
    out << " %" << outputs_[k];
    if (const std::optional<std::size_t> input = output_aliases_[k]) {
      out << " (updates input " << *input << " '" << node(inputs_[*input]).name << "')";
    }
  }
  out << '\n';
  return out.str();
}

}  // namespace kestrel::jit
