#include "framework/jit/profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>
#include <utility>

#include "framework/core/switch_setting.h"
#include "framework/ops/matmul.h"

namespace kestrel::jit {
namespace {

struct Row {
  std::string label;
  std::int64_t calls = 0;  // nodes of the program in this row: calls per run
  double flops = 0;        // per run (matmul rows)
  std::int64_t ns = 0;     // over every run
};

struct ProgramRows {
  std::string name;
  std::int64_t runs = 0;
  std::vector<Row> kinds;
  std::vector<Row> matmuls;
};

// Row `label` of `rows`, added when new; its index.
std::int32_t row_of(std::vector<Row>& rows, const std::string& label) {
  const auto found = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.label == label; });
  if (found != rows.end()) return static_cast<std::int32_t>(found - rows.begin());
  rows.push_back({.label = label});
  return static_cast<std::int32_t>(rows.size() - 1);
}

// "[8] 128 x 64 x 64" (batch, m x n x k) and its FLOPs: 2 per multiply-add. The output's last two
// dims are m and n; a's last two are m and k in some order, which gives k. Operands and products
// in the heads layout ([..., R, H, C], detail::MatmulHeadsLayout) are read as [..., H, R, C].
std::pair<std::string, double> matmul_shape(const Graph& graph, const Node& node) {
  const detail::MatmulHeadsLayout heads =
      detail::matmul_heads_layout(*node.primitive).value_or(detail::MatmulHeadsLayout{});
  const Shape& kept_out = node.spec.shape;
  const Shape& kept_a = graph.node(node.inputs[0]).spec.shape;
  const Shape out = heads.out ? detail::swap_heads_axes(kept_out) : kept_out;
  const Shape a = heads.a ? detail::swap_heads_axes(kept_a) : kept_a;
  const std::int64_t m = out[-2], n = out[-1];
  const std::int64_t k = m > 0 ? a[-1] * a[-2] / m : 0;
  std::string batch;
  for (int d = 0; d + 2 < out.rank(); ++d) {
    batch += batch.empty() ? '[' : ',';
    batch += std::to_string(out[d]);
  }
  std::string label = batch.empty() ? "" : batch + "] ";
  label += std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k);
  return {label, 2.0 * static_cast<double>(out.numel()) * static_cast<double>(k)};
}

std::string format_rows(std::vector<Row> rows, std::int64_t runs, std::int64_t total_ns, bool matmuls) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ns > b.ns; });
  char line[256];
  std::snprintf(line, sizeof line, "  %-36s %7s %9s %9s\n", matmuls ? "matmul [batch] m x n x k" : "op kind", "calls",
                "ms/run", matmuls ? "GFLOP/s" : "share");
  std::string out = line;
  for (const Row& r : rows) {
    const double ms = 1e-6 * static_cast<double>(r.ns) / static_cast<double>(runs);
    const double figure =
        matmuls ? (r.ns > 0 ? r.flops * static_cast<double>(runs) / static_cast<double>(r.ns) : 0.0)
                : 100.0 * static_cast<double>(r.ns) / static_cast<double>(std::max<std::int64_t>(total_ns, 1));
    std::snprintf(line, sizeof line, matmuls ? "  %-36s %7lld %9.3f %9.1f\n" : "  %-36s %7lld %9.3f %8.1f%%\n",
                  r.label.c_str(), static_cast<long long>(r.calls), ms, figure);
    out += line;
  }
  return out;
}

class Registry {
 public:
  ~Registry() {
    // At exit, what the process profiled. Programs that outlive the registry (a static model's)
    // never reach it again: a profiler touches it only while its program runs.
    const std::string text = report();
    if (!text.empty()) std::fputs(text.c_str(), stderr);
  }

  std::size_t program(const std::string& name) {
    const auto found = std::find_if(programs_.begin(), programs_.end(), [&](const auto& p) { return p->name == name; });
    if (found != programs_.end()) return static_cast<std::size_t>(found - programs_.begin());
    programs_.push_back(std::make_unique<ProgramRows>(ProgramRows{.name = name}));
    return programs_.size() - 1;
  }
  ProgramRows& rows(std::size_t program) { return *programs_[program]; }
  std::mutex& mutex() { return mutex_; }

  std::string report() {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const auto& p : programs_) {
      if (p->runs == 0) continue;
      const std::int64_t total = std::accumulate(p->kinds.begin(), p->kinds.end(), std::int64_t{0},
                                                 [](std::int64_t sum, const Row& r) { return sum + r.ns; });
      char line[96];
      std::snprintf(line, sizeof line, ": %lld runs, %.3f ms a run\n", static_cast<long long>(p->runs),
                    1e-6 * static_cast<double>(total) / static_cast<double>(p->runs));
      out += p->name + line;
      out += format_rows(p->kinds, p->runs, total, false);
      if (!p->matmuls.empty()) out += format_rows(p->matmuls, p->runs, total, true);
    }
    return out.empty() ? out : "KESTREL_PROFILE: kernel time per run of each compiled program\n" + out;
  }

  void reset() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& p : programs_) {
      p->runs = 0;
      for (Row& r : p->kinds) r.ns = 0;
      for (Row& r : p->matmuls) r.ns = 0;
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<ProgramRows>> programs_;  // their addresses stay while more are added
};

Registry& registry() {
  static Registry instance;
  return instance;
}

// -1: not set from code; else set_profiling's value.
std::atomic<int> g_set_profiling{-1};

}  // namespace

bool profiling() {
  if (const int set = g_set_profiling.load(); set >= 0) return set == 1;
  static const bool from_environment = parse_switch_setting(
      "KESTREL_PROFILE", std::getenv("KESTREL_PROFILE"),
      "time every compiled program's kernels and print the time per op kind and matmul shape at exit");
  return from_environment;
}

void set_profiling(bool on) { g_set_profiling = on ? 1 : 0; }

std::string profile_report() { return registry().report(); }

void reset_profiles() { registry().reset(); }

std::optional<ProfiledOp> profiled_op(const Graph& graph, ValueId id) {
  const Node& node = graph.node(id);
  if (node.kind != NodeKind::op || node.primitive->is_view()) return std::nullopt;
  ProfiledOp op{.kind = std::string(node.primitive->name())};
  if (node.primitive->id() == OpId::matmul) std::tie(op.matmul_shape, op.flops) = matmul_shape(graph, node);
  return op;
}

namespace {

std::vector<std::optional<ProfiledOp>> profiled_ops(const Graph& graph) {
  std::vector<std::optional<ProfiledOp>> ops;
  ops.reserve(static_cast<std::size_t>(graph.size()));
  for (ValueId id = 0; id < graph.size(); ++id) ops.push_back(profiled_op(graph, id));
  return ops;
}

}  // namespace

ProgramProfiler::ProgramProfiler(std::string program, const Graph& graph)
    : ProgramProfiler(std::move(program), profiled_ops(graph)) {}

ProgramProfiler::ProgramProfiler(std::string program, const std::vector<std::optional<ProfiledOp>>& calls)
    : kind_of_(calls.size(), -1), matmul_of_(calls.size(), -1), call_ns_(calls.size(), 0) {
  Registry& all = registry();
  const std::lock_guard<std::mutex> lock(all.mutex());
  program_ = all.program(program);
  ProgramRows& rows = all.rows(program_);
  // The first profiler of a program counts its calls; the others (other replicas' instances of
  // the same graph) find the rows made.
  const bool counting = rows.kinds.empty();
  for (std::size_t at = 0; at < calls.size(); ++at) {
    if (!calls[at]) continue;
    kind_of_[at] = row_of(rows.kinds, calls[at]->kind);
    if (counting) ++rows.kinds[static_cast<std::size_t>(kind_of_[at])].calls;
    if (calls[at]->matmul_shape.empty()) continue;
    matmul_of_[at] = row_of(rows.matmuls, calls[at]->matmul_shape);
    if (!counting) continue;
    Row& row = rows.matmuls[static_cast<std::size_t>(matmul_of_[at])];
    ++row.calls;
    row.flops += calls[at]->flops;
  }
}

void ProgramProfiler::finish_run() {
  Registry& all = registry();
  const std::lock_guard<std::mutex> lock(all.mutex());
  ProgramRows& rows = all.rows(program_);
  ++rows.runs;
  for (std::size_t at = 0; at < call_ns_.size(); ++at) {
    if (kind_of_[at] < 0) continue;
    rows.kinds[static_cast<std::size_t>(kind_of_[at])].ns += call_ns_[at];
    if (matmul_of_[at] >= 0) rows.matmuls[static_cast<std::size_t>(matmul_of_[at])].ns += call_ns_[at];
    call_ns_[at] = 0;
  }
}

}  // namespace kestrel::jit
