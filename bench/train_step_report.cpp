#include "bench/train_step_report.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "framework/core/cpu_capability.h"
#include "framework/layers/dtype_policy.h"

namespace kestrel::bench {
namespace {

constexpr double kJitOverEagerGoal = 1.3;     // BERT-tiny: the jit step at least 1.3x faster than eager
constexpr double kJitOverTorchGoal = 1.25;    // MLP, CNN, BERT-tiny: the jit >= 1.25x faster than PyTorch eager
constexpr double kBertCompileGoalMs = 200.0;  // BERT-tiny's train step compiled in under 200 ms
// mixed_bfloat16's jit step against float32's (BERT-tiny, GPT-tiny): with the CPU's bfloat16
// instructions at least 1.5x faster; without them at most 1.1x the time and 0.75x the peak memory.
constexpr double kBf16SpeedupGoal = 1.5;
constexpr double kBf16TimeLimit = 1.1;
constexpr double kBf16MemoryLimit = 0.75;
constexpr std::string_view kBf16GoalWorkloads[] = {"bert_tiny", "gpt_tiny"};
// The speed issue's gates, float32: the jit step this many times faster than PyTorch eager, and
// never slower than Kestrel eager.
struct SpeedGate {
  std::string_view workload;
  double over_torch;
};
constexpr SpeedGate kSpeedGates[] = {{"mlp", 1.5}, {"cnn", 2.0}, {"bert_tiny", 2.0}, {"gpt_tiny", 2.0}};

const Record* find_record(const Harness& harness, const std::string& label, const std::string& source) {
  for (const Record& r : harness.records()) {
    if (r.source == source && r.label() == label) return &r;
  }
  return nullptr;
}

// Rows of right-aligned cells after a left-aligned first column, every column its own width.
class Table {
 public:
  Table(std::ostream& out, std::vector<std::size_t> widths) : out_(out), widths_(std::move(widths)) {}

  void row(const std::vector<std::string>& cells) const {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string& text = cells[i];
      const std::size_t gap = text.size() < widths_[i] ? widths_[i] - text.size() : 1;
      line += i == 0 ? text + std::string(gap, ' ') : std::string(gap, ' ') + text;
    }
    out_ << line << "\n";
  }

 private:
  std::ostream& out_;
  std::vector<std::size_t> widths_;
};

std::string median_cell(const Record* r) { return r != nullptr ? fixed(r->timing.median_ms, 2) : "-"; }

std::string figure_cell(const Record* r, const char* key, int decimals) {
  if (r == nullptr) return "-";
  const auto value = r->figure(key);
  return value ? fixed(*value, decimals) : "-";
}

// "38%" for a figure of 0.38.
std::string percent_cell(const Record* r, const char* key) {
  if (r == nullptr) return "-";
  const auto value = r->figure(key);
  return value ? fixed(100 * *value, 0) + "%" : "-";
}

// How many times faster `faster` ran than `slower`: the ratio of their median step times.
std::optional<double> speedup(const Record* faster, const Record* slower) {
  if (faster == nullptr || slower == nullptr || faster->timing.median_ms <= 0) return std::nullopt;
  return slower->timing.median_ms / faster->timing.median_ms;
}

std::string speedup_cell(const Record* faster, const Record* slower) {
  const auto ratio = speedup(faster, slower);
  return ratio ? fixed(*ratio, 2) + "x" : "-";
}

// "412.3 (3.1x)": the first step's time and how many medians it took.
std::string first_step_cell(const Record* r) {
  if (r == nullptr) return "-";
  const auto first = r->figure("first_step_ms");
  if (!first || r->timing.median_ms <= 0) return "-";
  return fixed(*first, 1) + " (" + fixed(*first / r->timing.median_ms, 1) + "x)";
}

// The jit compiled nothing: Model ran the step eagerly, so its figures are eager's.
bool jit_ran_eagerly(const Record* jit) { return jit != nullptr && jit->figure("jit_compiles").value_or(0) == 0; }

void keep_verdict(Harness& harness, std::ostream& out, const std::string& verdict) {
  out << verdict << "\n";
  harness.note(verdict);
}

const char* met(bool ok) { return ok ? "met" : "not met"; }

const WorkloadRecords* results_of(const std::vector<WorkloadRecords>& results, std::string_view name,
                                  std::string_view precision = "float32") {
  for (const WorkloadRecords& r : results) {
    if (name == r.workload->name && precision == r.precision) return &r;
  }
  return nullptr;
}

// True when /proc/cpuinfo lists avx512_bf16 and the kernels run at the AVX-512 level (not pinned
// below it by KESTREL_CPU_CAPABILITY): oneDNN then runs bfloat16 matmuls natively.
bool computes_bf16_natively() {
  if (cpu_capability() != CpuCapability::avx512) return false;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) return line.find(" avx512_bf16") != std::string::npos;
  }
  return false;
}

// A process's peak memory over its base: what the step itself took.
std::optional<double> step_memory_mb(const Record* r) {
  if (r == nullptr) return std::nullopt;
  const auto peak = r->figure("peak_rss_mb");
  const auto base = r->figure("base_rss_mb");
  if (!peak || !base) return std::nullopt;
  return *peak - *base;
}

// bfloat16's goal on one workload: the mixed_bfloat16 jit step against float32's, in this run.
void report_bf16_goal(const WorkloadRecords& f32, const WorkloadRecords& mixed, bool native_bf16, Harness& harness,
                      std::ostream& out) {
  const auto speed = speedup(mixed.jit, f32.jit);
  if (!speed) return;
  const auto memory_f32 = step_memory_mb(f32.jit);
  const auto memory_mixed = step_memory_mb(mixed.jit);
  // A plain flag and ratio: GCC 12 misreads an optional<double> here as maybe uninitialized.
  const bool have_memory = memory_f32 && memory_mixed && *memory_f32 > 0;
  const double memory_ratio = have_memory ? *memory_mixed / *memory_f32 : 0.0;
  const std::string figures = std::string(" [mixed_bfloat16 ") + fixed(mixed.jit->timing.median_ms, 2) +
                              " ms, float32 " + fixed(f32.jit->timing.median_ms, 2) + " ms: " + fixed(*speed, 2) +
                              "x float32's speed, " + fixed(1.0 / *speed, 2) + "x its time; step memory " +
                              (have_memory ? fixed(memory_ratio, 2) + "x float32's" : std::string("-")) + "]";
  if (native_bf16) {
    keep_verdict(harness, out,
                 std::string("bfloat16 goal (") + f32.workload->title +
                     " mixed_bfloat16 jit step >= " + fixed(kBf16SpeedupGoal, 2) +
                     "x faster than float32, AVX512_BF16): " + met(*speed >= kBf16SpeedupGoal) + figures);
    return;
  }
  const bool time_ok = 1.0 / *speed <= kBf16TimeLimit;
  const bool memory_ok = have_memory && memory_ratio <= kBf16MemoryLimit;
  keep_verdict(harness, out,
               std::string("bfloat16 goal (") + f32.workload->title + " mixed_bfloat16 jit step at most " +
                   fixed(kBf16TimeLimit, 2) + "x float32's time and " + fixed(kBf16MemoryLimit, 2) +
                   "x its memory, no AVX512_BF16): " + met(time_ok && memory_ok) + figures);
}

// The eager-mode goal: the MLP step at least as fast as tuned PyTorch eager.
void report_eager_goal(const WorkloadRecords& mlp, Harness& harness, std::ostream& out) {
  const auto ratio = speedup(mlp.eager, mlp.torch);
  if (!ratio) return;
  keep_verdict(harness, out,
               "eager goal (MLP step at least as fast as PyTorch eager): " + std::string(met(*ratio >= 1.0)) +
                   " [Kestrel " + fixed(mlp.eager->timing.median_ms, 2) + " ms, PyTorch " +
                   fixed(mlp.torch->timing.median_ms, 2) + " ms: " + fixed(1.0 / *ratio, 2) + "x the time]");
}

void report_jit_over_eager_goal(const WorkloadRecords& bert, Harness& harness, std::ostream& out) {
  const auto ratio = speedup(bert.jit, bert.eager);
  if (!ratio) return;
  keep_verdict(harness, out,
               "jit goal (BERT-tiny jit step >= " + fixed(kJitOverEagerGoal, 2) + "x faster than Kestrel eager): " +
                   met(*ratio >= kJitOverEagerGoal) + " [jit " + fixed(bert.jit->timing.median_ms, 2) + " ms, eager " +
                   fixed(bert.eager->timing.median_ms, 2) + " ms: " + fixed(*ratio, 2) + "x]");
}

// A verdict over several workloads: met when every workload judged met its bar.
struct Verdict {
  bool judged = false;
  bool all_met = true;
  std::string detail;  ///< "MLP 1.56x (...), CNN 2.16x (...)"

  void add(bool ok, const std::string& text) {
    judged = true;
    all_met = all_met && ok;
    detail += (detail.empty() ? "" : ", ") + text;
  }
  void report(const std::string& goal, Harness& harness, std::ostream& out) const {
    if (judged) keep_verdict(harness, out, goal + ": " + met(all_met) + " [" + detail + "]");
  }
};

// The workloads the 1.25x goal against PyTorch eager covers; it is judged only when all of them have
// both figures. GPT-tiny has a goal of its own (report_gpt_goal).
constexpr std::string_view kJitOverTorchWorkloads[] = {"mlp", "cnn", "bert_tiny"};

void report_jit_over_torch_goal(const std::vector<WorkloadRecords>& results, Harness& harness, std::ostream& out) {
  Verdict verdict;
  for (std::string_view name : kJitOverTorchWorkloads) {
    const WorkloadRecords* r = results_of(results, name);
    const auto ratio = r != nullptr ? speedup(r->jit, r->torch) : std::nullopt;
    if (!ratio) return;
    verdict.add(*ratio >= kJitOverTorchGoal, std::string(r->workload->title) + " " + fixed(*ratio, 2) + "x");
  }
  verdict.report(
      "jit goal (jit step >= " + fixed(kJitOverTorchGoal, 2) + "x faster than PyTorch eager on MLP, CNN and BERT-tiny)",
      harness, out);
}

// The distribution issue's goal for GPT-tiny: the jit step at least as fast as tuned PyTorch eager.
void report_gpt_goal(const WorkloadRecords& gpt, Harness& harness, std::ostream& out) {
  const auto ratio = speedup(gpt.jit, gpt.torch);
  if (!ratio) return;
  keep_verdict(harness, out,
               "jit goal (GPT-tiny jit step at least as fast as PyTorch eager): " + std::string(met(*ratio >= 1.0)) +
                   " [jit " + fixed(gpt.jit->timing.median_ms, 2) + " ms, PyTorch " +
                   fixed(gpt.torch->timing.median_ms, 2) + " ms: " + fixed(*ratio, 2) + "x]");
}

// The speed issue's gates, each workload judged when both of its figures ran. Beside each ratio to
// PyTorch, the one a jit step at the FMA peak would reach: both sides do the same FLOPs, so it is
// the ratio over the jit's share of the peak, and a gate above it cannot be met on this machine.
// Only where the FLOPs counted are the step's (Workload::exact_flops): an overcount would give a
// ratio below the true one.
void report_speed_gates(const std::vector<WorkloadRecords>& results, Harness& harness, std::ostream& out) {
  Verdict over_torch, over_eager;
  for (const SpeedGate& gate : kSpeedGates) {
    const WorkloadRecords* r = results_of(results, gate.workload);
    if (r == nullptr) continue;
    if (const auto ratio = speedup(r->jit, r->torch)) {
      std::string text =
          std::string(r->workload->title) + " " + fixed(*ratio, 2) + "x (gate " + fixed(gate.over_torch, 1) + "x";
      const auto share = r->jit->figure("fma_peak_fraction");
      if (r->workload->exact_flops && share && *share > 0) {
        text += "; " + fixed(*ratio / *share, 2) + "x at the FMA peak";
      }
      over_torch.add(*ratio >= gate.over_torch, text + ")");
    }
    if (const auto ratio = speedup(r->jit, r->eager)) {
      over_eager.add(*ratio >= 1.0, std::string(r->workload->title) + " " + fixed(*ratio, 2) + "x");
    }
  }
  over_torch.report(
      "speed goal (float32 jit step >= 2.0x faster than PyTorch eager on CNN, BERT-tiny and GPT-tiny, >= 1.5x on "
      "the MLP)",
      harness, out);
  over_eager.report("speed goal (float32 jit step never slower than Kestrel eager)", harness, out);
}

void report_compile_goal(const WorkloadRecords& bert, Harness& harness, std::ostream& out) {
  if (bert.jit == nullptr) return;
  const std::string goal = "compile goal (BERT-tiny jit compile under " + fixed(kBertCompileGoalMs, 0) + " ms): ";
  if (jit_ran_eagerly(bert.jit)) {
    keep_verdict(harness, out, goal + "not judged [nothing was compiled: the step ran eagerly]");
    return;
  }
  const double compile_ms = bert.jit->figure("compile_ms").value_or(0);
  keep_verdict(harness, out, goal + met(compile_ms < kBertCompileGoalMs) + " [" + fixed(compile_ms, 1) + " ms]");
}

}  // namespace

std::vector<WorkloadRecords> collect_train_step_records(const Harness& harness) {
  std::vector<WorkloadRecords> results;
  for (const Workload& w : train_step_workloads()) {
    for (const std::string& precision : mixed_precision::policy_names()) {
      WorkloadRecords r;
      r.workload = &w;
      r.precision = precision;
      r.eager = find_record(harness, train_step_label(w, mode_name(Mode::eager), precision), "kestrel");
      r.jit = find_record(harness, train_step_label(w, mode_name(Mode::jit), precision), "kestrel");
      r.torch = find_record(harness, train_step_label(w, peer_mode_name(Mode::eager), precision), "torch");
      r.torchscript = find_record(harness, train_step_label(w, peer_mode_name(Mode::jit), precision), "torch");
      if (r.eager || r.jit || r.torch || r.torchscript) results.push_back(r);
    }
  }
  return results;
}

namespace {

void print_tables_at(const std::vector<WorkloadRecords>& results, std::ostream& out) {
  out << "\n== precision " << results.front().precision << " ==\n";
  out << "\nstep time (median ms) and the jit's speedup (the other's step time / the jit's):\n";
  const Table times(out, {12, 10, 10, 10, 12, 14, 14, 14});
  times.row({"", "kestrel", "kestrel", "torch", "torch", "jit speedup", "jit speedup", "jit speedup"});
  times.row({"workload", "eager", "jit", "eager", "torchscript", "vs eager", "vs torch", "vs torchscript"});
  for (const WorkloadRecords& r : results) {
    times.row({r.workload->title, median_cell(r.eager), median_cell(r.jit), median_cell(r.torch),
               median_cell(r.torchscript), speedup_cell(r.jit, r.eager), speedup_cell(r.jit, r.torch),
               speedup_cell(r.jit, r.torchscript)});
  }

  out << "\nthroughput (GFLOP/s; the jit's as a share of the float32 FMA peak) and each process's peak memory "
         "(VmHWM, MB):\n";
  const Table rates(out, {12, 10, 10, 10, 12, 10, 10, 10, 10, 12});
  rates.row({"", "GFLOP/s", "GFLOP/s", "GFLOP/s", "GFLOP/s", "jit", "peak MB", "peak MB", "peak MB", "peak MB"});
  rates.row({"workload", "eager", "jit", "torch", "torchscript", "FMA peak", "eager", "jit", "torch", "torchscript"});
  for (const WorkloadRecords& r : results) {
    rates.row({r.workload->title, figure_cell(r.eager, "gflops", 1), figure_cell(r.jit, "gflops", 1),
               figure_cell(r.torch, "gflops", 1), figure_cell(r.torchscript, "gflops", 1),
               percent_cell(r.jit, "fma_peak_fraction"), figure_cell(r.eager, "peak_rss_mb", 0),
               figure_cell(r.jit, "peak_rss_mb", 0), figure_cell(r.torch, "peak_rss_mb", 0),
               figure_cell(r.torchscript, "peak_rss_mb", 0)});
  }

  out << "\nfirst step, ms (in medians), and the jit's compile (Model::jit_stats() after the first step):\n";
  const Table first(out, {12, 16, 16, 16, 16, 12, 10});
  first.row({"", "first step", "first step", "first step", "first step", "jit", "jit"});
  first.row({"workload", "eager", "jit", "torch", "torchscript", "compile ms", "compiles"});
  for (const WorkloadRecords& r : results) {
    first.row({r.workload->title, first_step_cell(r.eager), first_step_cell(r.jit), first_step_cell(r.torch),
               first_step_cell(r.torchscript), figure_cell(r.jit, "compile_ms", 1),
               figure_cell(r.jit, "jit_compiles", 0)});
  }
}

}  // namespace

void print_train_step_tables(const std::vector<WorkloadRecords>& results, std::ostream& out) {
  for (const std::string& precision : mixed_precision::policy_names()) {
    std::vector<WorkloadRecords> at;
    for (const WorkloadRecords& r : results) {
      if (r.precision == precision) at.push_back(r);
    }
    if (!at.empty()) print_tables_at(at, out);
  }
  if (results.empty()) return;
  out << "(speedup above 1x: Kestrel's jit is faster. Peak MB is each process's; for torch it includes the\n"
         " interpreter and PyTorch themselves, base_rss_mb in the JSON. jit compiles: programs compiled in all the\n"
         " steps; 1 is right for a fixed batch. The peer's mixed_bfloat16 is torch.autocast(\"cpu\", bfloat16).\n"
         " jit FMA peak: the jit's GFLOP/s over the float32 FMA peak of the step's threads, the fma_peak record in\n"
         " the JSON; bfloat16 products, where the CPU has AVX512_BF16, run at twice that rate. GFLOP/s count 3x the\n"
         " forward FLOPs, which for the MLP and CNN include their first layer's input gradient, never taken.)\n";
}

void report_train_step_goals(const std::vector<WorkloadRecords>& results, Harness& harness, std::ostream& out) {
  out << "\n";
  for (const WorkloadRecords& r : results) {
    if (jit_ran_eagerly(r.jit)) {
      harness.note(std::string(r.workload->title) +
                   " jit: nothing was compiled (jit_stats().compiles is 0), so the step ran eagerly and the jit "
                   "figures are eager's");
    }
  }
  const WorkloadRecords* mlp = results_of(results, "mlp");
  const WorkloadRecords* bert = results_of(results, "bert_tiny");
  const WorkloadRecords* gpt = results_of(results, "gpt_tiny");
  if (mlp != nullptr) report_eager_goal(*mlp, harness, out);
  if (bert != nullptr) report_jit_over_eager_goal(*bert, harness, out);
  report_jit_over_torch_goal(results, harness, out);
  if (gpt != nullptr) report_gpt_goal(*gpt, harness, out);
  if (bert != nullptr) report_compile_goal(*bert, harness, out);
  report_speed_gates(results, harness, out);
  const bool native_bf16 = computes_bf16_natively();
  for (std::string_view name : kBf16GoalWorkloads) {
    const WorkloadRecords* f32 = results_of(results, name, "float32");
    const WorkloadRecords* mixed = results_of(results, name, "mixed_bfloat16");
    if (f32 != nullptr && mixed != nullptr) report_bf16_goal(*f32, *mixed, native_bf16, harness, out);
  }
}

}  // namespace kestrel::bench
