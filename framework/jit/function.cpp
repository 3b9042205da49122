#include "framework/jit/function.h"

#include <chrono>

#include "framework/core/error.h"
#include "framework/jit/dump.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/jit/trace.h"
#include "framework/logging/logging.h"

namespace kestrel::jit {

std::string signature_of(const std::vector<TensorSpec>& specs, const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i > 0) out += ", ";
    out += (i < names.size() ? names[i] : "input_" + std::to_string(i)) + ": " + specs[i].to_string();
  }
  return out;
}

Function::Function(Fn fn, std::string name, std::vector<std::string> names)
    : fn_(std::move(fn)), name_(std::move(name)), names_(std::move(names)) {
  if (!fn_) throw ValueError("jit::Function '" + name_ + "': the function is empty");
}

std::vector<Tensor> Function::operator()(const std::vector<Tensor>& inputs) {
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError("jit::Function '" + name_ + "': input " + std::to_string(i) + " is an undefined tensor");
    }
    specs.push_back(inputs[i].spec());
  }
  const std::string signature = signature_of(specs, names_);
  auto found = cache_.find(signature);
  const Executor& program = found != cache_.end() ? *found->second : compile(inputs, signature);
  return program.run(inputs);
}

const Executor& Function::compile(const std::vector<Tensor>& inputs, const std::string& signature) {
  const auto start = std::chrono::steady_clock::now();
  Trace trace;
  Graph graph;
  {
    TraceScope active(trace);
    std::vector<Tensor> symbolic;
    symbolic.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string input_name = i < names_.size() ? names_[i] : "input_" + std::to_string(i);
      symbolic.push_back(trace.input(inputs[i].spec(), input_name));
    }
    graph = trace.finish(fn_(symbolic));
  }
  graph.verify();
  const std::int64_t traced_ops = graph.num_ops();
  const std::optional<std::string> dump_dir = dump_directory();
  if (dump_dir) dump_graph(graph, *dump_dir, name_, compile_count_ + 1, "traced");
  default_pipeline().run(graph);
  if (dump_dir) dump_graph(graph, *dump_dir, name_, compile_count_ + 1, "optimized");
  auto executor = std::make_unique<Executor>(std::move(graph));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string cached;
  for (const auto& entry : cache_) cached += (cached.empty() ? "" : "; ") + entry.first;
  ++compile_count_;
  compile_seconds_ += seconds;
  logging::get("kestrel.jit")
      ->info("compiled '{}' #{} in {:.1f} ms, {} -> {} ops, for {} (new); cached: {}", name_, compile_count_,
             seconds * 1e3, traced_ops, executor->graph().num_ops(), signature, cached.empty() ? "none" : cached);
  logging::get("kestrel.jit")->info("memory plan for '{}': {}", name_, executor->memory_plan().to_string());
  return *cache_.emplace(signature, std::move(executor)).first->second;
}

const Graph* Function::graph(const std::string& signature) const {
  auto found = cache_.find(signature);
  return found == cache_.end() ? nullptr : &found->second->graph();
}

}  // namespace kestrel::jit
