// End-to-end training-step benchmark: the MLP, CNN, BERT-tiny and GPT-tiny workloads of the reference
// table (2 threads, the same seeded batch every step; float32, and mixed_bfloat16 with PyTorch's
// autocast to bfloat16 as its peer), one Kestrel step being
// model.train_on_batch(inputs, labels) — forward, loss, backward and the optimizer update — run two
// ways: eagerly, op by op, and compiled by the jit (compile({..., .jit_compile = true})). Beside
// them, in the same run, peers/train_step_peer.py runs the same models with PyTorch eager and
// TorchScript.
//
//   ./build/bench/train_step_bench                              # every workload and mode, peer included
//   ./build/bench/train_step_bench --filter bert_tiny --repeats 100 --json-out train_step.json
//   ./build/bench/train_step_bench --filter gpt_tiny --repeats 10      # GPT-tiny alone, its peer included
//   ./build/bench/train_step_bench --filter 'mode=(eager|jit)' --no-peer
//   ./build/bench/train_step_bench --precisions float32,mixed_bfloat16,bfloat16 --filter bert_tiny
//
// Figures: GFLOP/s (3 x the forward matmul/conv FLOPs per step over the median step time), samples/s,
// ms/step, the first step's time, the jit's compile time, and the peak resident memory of the process
// (VmHWM). Each Kestrel workload and mode runs in a fresh child process of this program, and the peer
// in a fresh Python process per workload and mode, so each peak belongs to one case alone. First the
// machine's float32 FMA peak is measured (bench/fma_peak.h), and Kestrel's cases add
// fma_peak_fraction: their GFLOP/s over the peak on the step's threads.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "bench/fma_peak.h"
#include "bench/harness.h"
#include "bench/train_step_report.h"
#include "bench/train_step_workloads.h"
#include "framework/core/thread_pool.h"
#include "framework/layers/dtype_policy.h"
#include "framework/logging/logging.h"

namespace {

using kestrel::bench::fixed;
using kestrel::bench::FmaPeak;
using kestrel::bench::Harness;
using kestrel::bench::Mode;
using kestrel::bench::Record;
using kestrel::bench::Workload;

constexpr Mode kModes[] = {Mode::eager, Mode::jit};

template <class Fn>
double time_ms(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Child mode: measures one workload in one mode in this (fresh) process and prints its record as JSON.
// The first step is timed on its own: under the jit it traces and compiles the step, so its time and
// the compile time it reports are the figures a user waits for. The warm-up and timed steps follow.
int run_child(const Harness& harness, const Workload& w, Mode mode, const std::string& precision) {
  // The jit logs each compile at info level; the record carries the compile time, so the child's
  // stderr is kept for warnings and errors unless KESTREL_LOG_LEVEL asks for more.
  if (std::getenv("KESTREL_LOG_LEVEL") == nullptr) kestrel::logging::set_level(spdlog::level::warn);
  kestrel::set_num_threads(kestrel::bench::kTrainStepThreads);
  const double base_rss_mb = kestrel::bench::status_mb("VmRSS");
  kestrel::bench::TrainStep step = kestrel::bench::make_train_step(w, mode, precision);
  auto train_on_batch = [&] { step.model->train_on_batch(step.inputs, step.labels); };

  const double first_step_ms = time_ms(train_on_batch);
  const kestrel::JitStats after_first_step = step.model->jit_stats();
  Record record;
  record.name = "train_step";
  record.params = kestrel::bench::train_step_params(w, kestrel::bench::mode_name(mode), precision);
  record.timing = kestrel::bench::time_calls(train_on_batch, harness.options().warmup, harness.options().repeats);
  const double ms = record.timing.median_ms;
  record.figures = {{"gflops", kestrel::bench::gflops(w.training_gflop * 1e9, ms)},
                    {"samples_per_s", ms > 0 ? 1e3 * static_cast<double>(w.batch) / ms : 0.0},
                    {"ms_per_step", ms},
                    {"first_step_ms", first_step_ms},
                    {"peak_rss_mb", kestrel::bench::status_mb("VmHWM")},
                    {"base_rss_mb", base_rss_mb}};
  if (mode == Mode::jit) {
    record.figures.emplace_back("compile_ms", 1e3 * after_first_step.compile_seconds);
    // More than one compile for a fixed batch would mean the jit recompiles as it goes.
    record.figures.emplace_back("jit_compiles", static_cast<double>(step.model->jit_stats().compiles));
  }
  kestrel::bench::print_child_record(record);
  return 0;
}

int run_child(const Harness& harness, const std::string& name, const std::string& mode_name,
              const std::string& precision) {
  const Workload* workload = kestrel::bench::find_workload(name);
  const std::optional<Mode> mode = kestrel::bench::parse_mode(mode_name);
  if (workload == nullptr || !mode || !kestrel::bench::is_precision(precision)) {
    std::cerr << "train_step_bench: unknown workload '" << name << "', mode '" << mode_name << "' or precision '"
              << precision << "'\n";
    return 2;
  }
  return run_child(harness, *workload, *mode, precision);
}

// Runs one workload and mode in a child process of this program; its record, or nothing (with a
// note) on failure.
std::optional<Record> measure_in_child(Harness& harness, const Workload& w, Mode mode, const std::string& precision) {
  return kestrel::bench::measure_in_child(
      harness, kestrel::bench::train_step_label(w, kestrel::bench::mode_name(mode), precision),
      {"--workload-child", w.name, "--workload-mode", kestrel::bench::mode_name(mode), "--workload-precision",
       precision});
}

// One line per finished case, so a run of several minutes shows its progress.
void print_progress(const Record& r) {
  std::cout << r.label() << " [" << r.source << "]: " << fixed(r.timing.median_ms, 2) << " ms/step (min "
            << fixed(r.timing.min_ms, 2) << ", p90 " << fixed(r.timing.p90_ms, 2) << "), "
            << fixed(r.figure("gflops").value_or(0), 1) << " GFLOP/s";
  if (auto share = r.figure("fma_peak_fraction")) std::cout << " (" << fixed(100 * *share, 0) << "% of FMA peak)";
  std::cout << ", " << fixed(r.figure("samples_per_s").value_or(0), 0) << " samples/s, first step "
            << fixed(r.figure("first_step_ms").value_or(0), 1) << " ms";
  if (auto compile_ms = r.figure("compile_ms")) std::cout << ", compile " << fixed(*compile_ms, 1) << " ms";
  std::cout << ", peak RSS " << fixed(r.figure("peak_rss_mb").value_or(0), 0) << " MB" << std::endl;
}

// A fresh Python process for the peer's counterpart of one Kestrel mode, run right after it so both
// sides see the same machine load, and the peer's peak memory is that case's alone.
void measure_peer(Harness& harness, const Workload& w, Mode mode, const std::string& precision) {
  const std::string label = kestrel::bench::train_step_label(w, kestrel::bench::peer_mode_name(mode), precision);
  if (!harness.selected(label)) return;
  const auto run = harness.run_peer(
      "train_step_peer.py", {"--threads", std::to_string(kestrel::bench::kTrainStepThreads), "--precision", precision},
      kestrel::bench::exact_labels_regex({label}));
  for (const Record& r : run.records) print_progress(r);
}

// Every workload at every precision, each Kestrel mode followed by its peer counterpart; false when
// a Kestrel case failed. With --rounds, a workload's modes are measured that many times over, one
// round after the other, so that each round's jit step and PyTorch eager step are seconds apart.
// Kestrel's records get their share of the FMA peak when it was measured.
bool measure_all(Harness& harness, const std::vector<std::string>& precisions, const std::optional<FmaPeak>& peak) {
  bool all_ran = true;
  for (const Workload& w : kestrel::bench::train_step_workloads()) {
    for (const std::string& precision : precisions) {
      for (int round = 0; round < harness.rounds(); ++round) {
        for (Mode mode : kModes) {
          if (harness.selected(kestrel::bench::train_step_label(w, kestrel::bench::mode_name(mode), precision))) {
            auto record = measure_in_child(harness, w, mode, precision);
            all_ran = all_ran && record.has_value();
            if (record) {
              if (const auto rate = record->figure("gflops"); rate && peak) {
                const double share = kestrel::bench::fma_peak_fraction(*peak, *rate, kestrel::bench::kTrainStepThreads);
                record->figures.emplace_back("fma_peak_fraction", share);
              }
              print_progress(*record);
              harness.add(*record);
            }
          }
          measure_peer(harness, w, mode, precision);
        }
      }
    }
  }
  return all_ran;
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("train_step_bench",
                  "End-to-end training steps (MLP, CNN, BERT-tiny, GPT-tiny): Kestrel's train_on_batch eager and "
                  "under jit_compile, beside PyTorch eager and TorchScript, measured in the same run");
  std::string child_workload;
  std::string child_mode = "eager";
  std::string child_precision = "float32";
  std::vector<std::string> precisions = {"float32", "mixed_bfloat16"};
  harness.cli()
      .add_option("--precisions", precisions, "the precision policies to run, each beside its peer")
      .delimiter(',')
      .choices(kestrel::mixed_precision::policy_names());
  harness.cli()
      .add_option("--workload-child", child_workload, "internal: measure this workload in this process")
      .hidden();
  harness.cli().add_option("--workload-mode", child_mode, "internal: the child's mode, eager or jit").hidden();
  harness.cli().add_option("--workload-precision", child_precision, "internal: the child's precision").hidden();
  harness.offer_rounds();
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;
  if (!child_workload.empty()) {
    try {
      return run_child(harness, child_workload, child_mode, child_precision);
    } catch (const std::exception& e) {
      // The parent notes the failure; the error itself goes to stderr, which the parent shares.
      std::cerr << "train_step_bench: " << child_workload << " " << child_mode << ": " << e.what() << "\n";
      return 1;
    }
  }

  const std::optional<FmaPeak> peak = kestrel::bench::add_fma_peak(harness);
  const bool all_ran = measure_all(harness, precisions, peak);
  const auto results = kestrel::bench::collect_train_step_records(harness);
  kestrel::bench::print_train_step_tables(results, std::cout);
  kestrel::bench::report_train_step_goals(results, harness, std::cout);
  const int exit_code = harness.finish();
  return all_ran ? exit_code : 1;
}
