#include "framework/jit/program_cache.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

#include "framework/jit/dump.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/logging/logging.h"

namespace kestrel::jit {

ProgramCache::ProgramCache(std::string function_name) : function_name_(std::move(function_name)) {}

const std::shared_ptr<Arena>& ProgramCache::arena(int instance) {
  while (static_cast<int>(arenas_.size()) <= instance) arenas_.push_back(std::make_shared<Arena>());
  return arenas_[static_cast<std::size_t>(instance)];
}

std::int64_t ProgramCache::arena_bytes() const {
  std::int64_t total = 0;
  for (const auto& arena : arenas_) total += arena->capacity();
  return total;
}

std::int64_t ProgramCache::largest_arena_bytes() const {
  std::int64_t largest = 0;
  for (const auto& arena : arenas_) largest = std::max(largest, arena->capacity());
  return largest;
}

BytesByDtype ProgramCache::largest_live_peak_by_dtype() const {
  const MemoryPlan* largest = nullptr;
  for (const auto& [signature, instances] : programs_) {
    for (const auto& part : instances.front()) {
      const MemoryPlan& plan = part->memory_plan();
      if (largest == nullptr || plan.live_peak_bytes > largest->live_peak_bytes) largest = &plan;
    }
  }
  return largest != nullptr ? largest->live_peak_by_dtype : BytesByDtype{};
}

const Executor& ProgramCache::get(const std::string& signature, const std::function<Graph()>& trace, int instance) {
  return *get_parts(
              signature,
              [&] {
                std::vector<Graph> one;
                one.push_back(trace());
                return one;
              },
              instance)
              .front();
}

std::vector<const Executor*> ProgramCache::get_parts(const std::string& signature,
                                                     const std::function<std::vector<Graph>()>& trace, int instance) {
  auto found = programs_.find(signature);
  if (instance == 0) note_call(found == programs_.end());
  Instances& instances = found != programs_.end() ? found->second : compile(signature, trace);
  if (static_cast<int>(instances.size()) <= instance) instances.resize(static_cast<std::size_t>(instance) + 1);
  Parts& parts = instances[static_cast<std::size_t>(instance)];
  if (parts.empty()) {
    std::int64_t largest = 0;
    for (const auto& compiled : instances[0]) {
      parts.push_back(std::make_unique<Executor>(compiled->graph(), arena(instance), compiled->name()));
      largest = std::max(largest, parts.back()->planned_bytes());
    }
    // The instance's block now rather than at some later run: when a run first needs this
    // instance depends on the threads' timing, and a steady step must not be the one that allocates.
    const std::shared_ptr<Arena>& block = arena(instance);
    const std::lock_guard<std::mutex> lock(block->mutex());
    block->reserve(largest);
  }
  std::vector<const Executor*> out;
  for (const auto& part : parts) out.push_back(part.get());
  return out;
}

ProgramCache::Instances& ProgramCache::compile(const std::string& signature,
                                               const std::function<std::vector<Graph>()>& trace) {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t number = compile_count_ + 1;
  std::vector<Graph> graphs = trace();
  const std::optional<std::string> dump_dir = dump_directory();
  std::int64_t traced_ops = 0, optimized_ops = 0;
  Parts parts;
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    Graph& graph = graphs[k];
    graph.verify();
    traced_ops += graph.num_ops();
    const std::string part = graphs.size() == 1 ? "" : "part" + std::to_string(k) + ".";
    if (dump_dir) dump_graph(graph, *dump_dir, function_name_, number, part + "traced");
    default_pipeline().run(graph);
    if (dump_dir) dump_graph(graph, *dump_dir, function_name_, number, part + "optimized");
    const std::string name = "'" + function_name_ + "' #" + std::to_string(number) +
                             (graphs.size() == 1 ? "" : " part " + std::to_string(k)) + " for " + signature;
    parts.push_back(std::make_unique<Executor>(std::move(graph), arena(0), name));
    optimized_ops += parts.back()->graph().num_ops();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::string cached;
  for (const auto& entry : programs_) cached += (cached.empty() ? "" : "; ") + entry.first;
  compile_count_ = number;
  compile_seconds_ += seconds;
  auto log = logging::get("kestrel.jit");
  log->info("compiled '{}' #{} in {:.1f} ms, {} -> {} ops{}, for {} (new); cached: {}", function_name_, number,
            seconds * 1e3, traced_ops, optimized_ops,
            parts.size() == 1 ? "" : " in " + std::to_string(parts.size()) + " parts", signature,
            cached.empty() ? "none" : cached);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    log->info("memory plan for '{}'{}: {}", function_name_, parts.size() == 1 ? "" : " part " + std::to_string(k),
              parts[k]->memory_plan().to_string());
  }
  Instances instances;
  instances.push_back(std::move(parts));
  return programs_.emplace(signature, std::move(instances)).first->second;
}

void ProgramCache::note_call(bool compiled) {
  recent_.push_back(compiled);
  if (recent_.size() > static_cast<std::size_t>(kStormWindow)) recent_.pop_front();
  const auto compiles = std::count(recent_.begin(), recent_.end(), true);
  if (compiles < kStormCompiles) {
    storm_reported_ = false;  // the storm is over: warn again if another one starts
    return;
  }
  if (storm_reported_) return;
  storm_reported_ = true;
  logging::get("kestrel.jit")
      ->warn(
          "'{}' compiled {} times in its last {} calls: its input shapes keep changing, and every new shape "
          "compiles again (XLA's rule 3). Pad batches to a few shapes, e.g. dataset.padded_batch(batch_size, "
          "{{.pad_to_multiple_of = 32}}), or collate with pad_to_multiple_of = 32",
          function_name_, compiles, recent_.size());
}

const Graph* ProgramCache::graph(const std::string& signature) const {
  auto found = programs_.find(signature);
  return found == programs_.end() ? nullptr : &found->second.front().front()->graph();
}

}  // namespace kestrel::jit
