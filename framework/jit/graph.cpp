#include "framework/jit/graph.h"

#include <sstream>

#include "framework/core/error.h"

namespace kestrel::jit {

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
  nodes_.push_back(Node{.kind = NodeKind::op, .primitive = std::move(primitive), .inputs = std::move(inputs),
                        .spec = spec, .name = std::move(scope)});
  return size() - 1;
}

std::int64_t Graph::num_ops() const {
  std::int64_t n = 0;
  for (const Node& node : nodes_) n += node.kind == NodeKind::op;
  return n;
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
}

std::string Graph::to_string() const {
  std::ostringstream out;
  for (ValueId id = 0; id < size(); ++id) {
    const Node& n = node(id);
    out << '%' << id << " = ";
    switch (n.kind) {
      case NodeKind::input:
        out << "input '" << n.name << "'";
        break;
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
  for (ValueId id : outputs_) out << " %" << id;
  out << '\n';
  return out.str();
}

}  // namespace kestrel::jit
