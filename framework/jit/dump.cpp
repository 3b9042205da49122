#include "framework/jit/dump.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "jit/graph.pb.h"

namespace kestrel::jit {
namespace {

const char* kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::input: return "input";
    case NodeKind::constant: return "constant";
    case NodeKind::op: return "op";
  }
  return "op";
}

GraphProto to_proto(const Graph& graph, const std::string& function, const std::string& stage) {
  GraphProto out;
  out.set_function(function);
  out.set_stage(stage);
  for (ValueId id = 0; id < graph.size(); ++id) {
    const Node& node = graph.node(id);
    NodeProto* n = out.add_nodes();
    n->set_id(id);
    n->set_kind(kind_name(node.kind));
    if (node.kind == NodeKind::op) {
      n->set_op(std::string(node.primitive->name()));
      n->set_params(node.primitive->params());
      for (ValueId in : node.inputs) n->add_inputs(in);
    }
    for (std::int64_t d : node.spec.shape.dims()) n->mutable_spec()->add_shape(d);
    n->mutable_spec()->set_dtype(std::string(kestrel::to_string(node.spec.dtype)));
    n->set_name(node.name);
  }
  for (ValueId id : graph.inputs()) out.add_inputs(id);
  for (ValueId id : graph.outputs()) out.add_outputs(id);
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    if (const std::optional<std::size_t> input = graph.output_alias(k)) {
      OutputAliasProto* alias = out.add_aliases();
      alias->set_output_index(static_cast<std::int64_t>(k));
      alias->set_input_index(static_cast<std::int64_t>(*input));
    }
  }
  return out;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  if (!file) throw IOError("KESTREL_DUMP_DIR: cannot write '" + path.string() + "'");
}

}  // namespace

std::optional<std::string> dump_directory() {
  const char* dir = std::getenv("KESTREL_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  return std::string(dir);
}

void dump_graph(const Graph& graph, const std::string& directory, const std::string& function, std::int64_t compile,
                const std::string& stage) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw IOError("KESTREL_DUMP_DIR: cannot create '" + directory + "': " + error.message());
  const std::filesystem::path base =
      std::filesystem::path(directory) / (function + "." + std::to_string(compile) + "." + stage);
  write_file(base.string() + ".txt", graph.to_string());
  write_file(base.string() + ".pb", to_proto(graph, function, stage).SerializeAsString());
}

}  // namespace kestrel::jit
