#include "tutorials/05_tpu_strategy/tpu_report.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/jit/memory_plan.h"

namespace kestrel::tutorials::tpu {
namespace {

jit::BytesByDtype bytes_of(const std::vector<Variable>& variables) {
  jit::BytesByDtype out;
  for (const Variable& v : variables) out[v.dtype()] += static_cast<std::int64_t>(v.stored_value().nbytes());
  return out;
}

std::string bytes(std::int64_t n) { return jit::format_bytes(n); }
std::string bytes(const jit::BytesByDtype& n) { return jit::format_bytes(n); }

nlohmann::ordered_json json_of(const jit::BytesByDtype& by_dtype) {
  nlohmann::ordered_json out;
  for (const auto& [dtype, n] : by_dtype) out[std::string(to_string(dtype))] = n;
  return out;
}

}  // namespace

ReplicaMemory memory_per_replica(const Model& model, std::int64_t core_bytes) {
  const JitStats jit = model.jit_stats();
  return {
      .weights = bytes_of(model.weights()),
      .gradients = bytes_of(model.trainable_weights()),
      .optimizer_state = model.optimizer() != nullptr ? bytes_of(model.optimizer()->variables()) : jit::BytesByDtype{},
      .intermediates = jit.arena_bytes_per_replica,
      .intermediates_at_peak = jit.live_peak_by_dtype_per_replica,
      .host_arenas = jit.arena_bytes,
      .core = core_bytes};
}

double real_tokens_per_second(const RunReport& r) {
  return r.fit_seconds > 0 ? static_cast<double>(r.padding.real_values) / r.fit_seconds : 0.0;
}

void print_report(const RunReport& r) {
  const ReplicaMemory& m = r.memory;
  std::printf(
      "\nsummary  replicas             %d in sync, each running the step on %lld of the %lld texts of a "
      "global batch\n",
      r.replicas, static_cast<long long>(r.global_batch / r.replicas), static_cast<long long>(r.global_batch));
  std::printf("         precision            %s; %.1f ms per training step (fit's time over its %lld steps)\n",
              r.precision.c_str(), r.steps > 0 ? 1e3 * r.fit_seconds / static_cast<double>(r.steps) : 0.0,
              static_cast<long long>(r.steps));
  std::printf(
      "         compiles             %lld during fit (%.1f ms), %lld more for the test set; each program "
      "serves all %d replicas\n",
      static_cast<long long>(r.fit_jit.compiles), 1e3 * r.fit_jit.compile_seconds,
      static_cast<long long>(r.jit.compiles - r.fit_jit.compiles), r.replicas);
  std::printf(
      "         padding efficiency   %.1f%% of the training batches' tokens are text; %lld distinct batch "
      "shape(s)\n",
      100.0 * r.padding.efficiency(), static_cast<long long>(r.padding.distinct_shapes));
  std::printf("         real tokens          %.0f per second of fit: tokens of text trained, padding left out\n",
              real_tokens_per_second(r));
  std::printf("         memory per replica   weights           %s\n", bytes(m.weights).c_str());
  std::printf("                              gradients         %s\n", bytes(m.gradients).c_str());
  std::printf("                              optimizer state   %s\n", bytes(m.optimizer_state).c_str());
  std::printf("                              intermediates     %s (at their peak: %s)\n",
              bytes(m.intermediates).c_str(), bytes(m.intermediates_at_peak).c_str());
  if (m.core > 0) {
    std::printf("                              = %s of a core's %s (%.2f%%)\n", bytes(m.total()).c_str(),
                bytes(m.core).c_str(), 100.0 * static_cast<double>(m.total()) / static_cast<double>(m.core));
  }
  // What this process holds: the simulated replicas read one shared copy of the weights and the
  // optimizer state, add their gradients into one sum as they finish, and run on as many arenas
  // as replicas run at once.
  const std::int64_t host =
      jit::total_bytes(m.weights) + jit::total_bytes(m.optimizer_state) + jit::total_bytes(m.gradients) + m.host_arenas;
  std::printf(
      "                              (on this host, where the %d replicas share one copy of the weights, "
      "the optimizer state and the gradients' sum, and the arenas of the replicas that run at once: "
      "%s in all)\n",
      r.replicas, bytes(host).c_str());
  std::printf("         test accuracy        %.4f\n", r.test_logs.at("accuracy"));
}

void write_json(const std::string& path, const RunReport& r) {
  nlohmann::ordered_json json;
  for (const auto& [name, value] : r.test_logs) json["test_" + name] = value;
  json["reloaded_test_accuracy"] = r.reloaded_accuracy;
  json["precision"] = r.precision;
  json["replicas"] = r.replicas;
  json["step_ms"] = r.steps > 0 ? 1e3 * r.fit_seconds / static_cast<double>(r.steps) : 0.0;
  json["global_batch_size"] = r.global_batch;
  json["fit_seconds"] = r.fit_seconds;
  json["compiles_during_fit"] = r.fit_jit.compiles;
  json["compiles"] = r.jit.compiles;
  json["compile_seconds"] = r.jit.compile_seconds;
  json["distinct_batch_shapes"] = r.padding.distinct_shapes;
  json["padding_efficiency"] = r.padding.efficiency();
  json["real_tokens_per_second"] = real_tokens_per_second(r);
  json["memory_per_replica_bytes"] = {{"weights", jit::total_bytes(r.memory.weights)},
                                      {"gradients", jit::total_bytes(r.memory.gradients)},
                                      {"optimizer_state", jit::total_bytes(r.memory.optimizer_state)},
                                      {"intermediates", r.memory.intermediates},
                                      {"total", r.memory.total()},
                                      {"core", r.memory.core}};
  json["memory_per_replica_by_dtype"] = {{"weights", json_of(r.memory.weights)},
                                         {"gradients", json_of(r.memory.gradients)},
                                         {"optimizer_state", json_of(r.memory.optimizer_state)},
                                         {"intermediates_at_peak", json_of(r.memory.intermediates_at_peak)}};
  std::ofstream file(path);
  file << json.dump(2) << "\n";
  if (!file) throw IOError("cannot write the summary to '" + path + "'");
}

}  // namespace kestrel::tutorials::tpu
