// What simulated replicas cost: BERT-tiny and GPT-tiny (the reference workloads of shared/BENCH.md)
// trained under jit_compile on one replica and on the 8 cores of a local TPUStrategy at the same
// global batch, and the strategy's all-reduce over gradient lists of their sizes.
//
//   ./build/bench/replica_bench                          # both models, 1 and 8 replicas, and the all-reduces
//   ./build/bench/replica_bench --filter gpt_tiny --repeats 10 --json-out replicas.json
//   ./build/bench/replica_bench --filter all_reduce      # the all-reduces alone
//
// Cases (threads=2 throughout):
//   replica_step model=… batch=… replicas=1          the step of the model built and compiled with no
//                                                    strategy
//   replica_step model=… batch=… replicas=8          the step of the model built, compiled and trained in
//                                                    the scope of TPUStrategy(TPUClusterResolver::local())
//   replica_peak_memory model=… batch=… replicas=…   the peak resident memory (VmHWM) of a process that
//                                                    trains that configuration alone
//   all_reduce model=… replicas=8                    distribute::all_reduce_sum over 8 replicas' gradients
//                                                    of the model's trainable weights: the eager step's
//                                                    all-reduce (the compiled step gathers the rows of an
//                                                    embedding's gradient instead of summing its table)
//   train_step model=… batch=… threads=2 mode=eager  [torch] the same model and global batch trained by
//                                                    tuned PyTorch eager (--no-peer leaves it out)
// A step is model.train_on_batch(inputs, labels) on the workload's fixed batch, compiled with
// jit_compile. The goals, judged on this run: 8 replicas' step at most the 1-replica step and at
// least 1.8x faster than PyTorch eager's at the same global batch (peers/train_step_peer.py, run
// right after each model), and their peak memory at most 1.25x. The float32 FMA peak is measured
// first (bench/fma_peak.h), so the peer goal's verdict also gives the speedup a step at that peak
// would reach.
//
// How: per model, one child process of this program times both configurations' steps interleaved
// (1, 8, 8, 1, 1, 8, ...), so that a change in the machine's load, common on a shared machine, falls on
// both alike and leaves their ratio; then one fresh child per configuration reports its peak memory.
// The all-reduces run last, in this process.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench/child_process.h"
#include "bench/fma_peak.h"
#include "bench/harness.h"
#include "bench/train_step_workloads.h"
#include "framework/core/random.h"
#include "framework/core/thread_pool.h"
#include "framework/logging/logging.h"
#include "programs/command_line.h"
#include "strategies/all_reduce.h"
#include "strategies/tpu_strategy.h"

namespace {

using kestrel::bench::fixed;
using kestrel::bench::FmaPeak;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Record;
using kestrel::bench::Workload;

// The workloads trained on replicas: the two Transformers of the reference table.
constexpr std::string_view kModels[] = {"bert_tiny", "gpt_tiny"};

constexpr double kStepGoal = 1.00;    // 8 replicas' step time at most one replica's
constexpr double kPeerGoal = 1.8;     // 8 replicas' step at least 1.8x faster than PyTorch eager's
constexpr double kMemoryGoal = 1.25;  // 8 replicas' peak resident memory at most 1.25x one replica's

constexpr double kMiB = 1024.0 * 1024.0;

// The replicas of a local TPU system: 8 simulated cores.
int tpu_replicas() { return kestrel::distribute::TPUClusterOptions{}.num_cores; }

Json config_params(const Workload& w, int replicas) {
  return {
      {"model", w.name}, {"batch", w.batch}, {"replicas", replicas}, {"threads", kestrel::bench::kTrainStepThreads}};
}

std::string step_label(const Workload& w, int replicas) {
  return kestrel::bench::case_label("replica_step", config_params(w, replicas));
}

std::string memory_label(const Workload& w, int replicas) {
  return kestrel::bench::case_label("replica_peak_memory", config_params(w, replicas));
}

template <class Fn>
double time_ms(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// CPU time of every thread of this process, in ms.
double process_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return 1e3 * static_cast<double>(now.tv_sec) + 1e-6 * static_cast<double>(now.tv_nsec);
}

// One configuration: the workload's compiled model on `replicas` replicas. With more than one, the
// model is built and compiled in the scope of a TPUStrategy of that many cores, so its variables and
// optimizer slots belong to the strategy, and each step runs in that scope too, splitting the global
// batch over the replicas.
class Configuration {
 public:
  Configuration(const Workload& w, int replicas) : replicas_(replicas) {
    std::optional<kestrel::distribute::DistributionScope> scope;
    if (replicas > 1) {
      strategy_ = std::make_unique<kestrel::distribute::TPUStrategy>(
          kestrel::distribute::TPUClusterResolver::local({.num_cores = replicas}));
      scope.emplace(*strategy_);
    }
    step_ = kestrel::bench::make_train_step(w, kestrel::bench::Mode::jit);
  }

  int replicas() const { return replicas_; }
  const kestrel::Model& model() const { return *step_.model; }

  void train_step() {
    std::optional<kestrel::distribute::DistributionScope> scope;
    if (strategy_) scope.emplace(*strategy_);
    step_.model->train_on_batch(step_.inputs, step_.labels);
  }

 private:
  int replicas_;
  // Declared before step_, so that step_'s model, which refers to the strategy, is destroyed first.
  std::unique_ptr<kestrel::distribute::TPUStrategy> strategy_;
  kestrel::bench::TrainStep step_;
};

// What a child does first: quiet logs (the jit and the strategy log at info level; the records carry
// their figures) unless KESTREL_LOG_LEVEL asks for more, and the bench's thread count, set before any
// step runs: a strategy's replicas run on the intra-op pool, and how they share it depends on its size.
void setup_process() {
  if (std::getenv("KESTREL_LOG_LEVEL") == nullptr) kestrel::logging::set_level(spdlog::level::warn);
  kestrel::set_num_threads(kestrel::bench::kTrainStepThreads);
}

// Timing child: trains every configuration in this one process, their steps interleaved. Each one's
// first step (tracing and compiling) is timed on its own, then come the warm-up rounds and the timed
// rounds, one step of each configuration a round, the order reversed every other round so neither
// always runs right after the other. Prints a replica_step record per configuration.
//
// Each timed step also reads the process's CPU time. The pools' idle threads sleep rather than spin,
// so CPU time per step is the work done, and wall time over it shows how well that work kept the
// cores busy; CPU time is also far less disturbed than wall time by other work on the machine.
int run_timing_child(const Harness& harness, const Workload& w, const std::vector<int>& replica_counts) {
  setup_process();
  std::vector<std::unique_ptr<Configuration>> configurations;
  for (int replicas : replica_counts) configurations.push_back(std::make_unique<Configuration>(w, replicas));
  const std::size_t n = configurations.size();
  std::vector<double> first_step_ms(n), compile_ms(n);
  for (std::size_t i = 0; i < n; ++i) {
    first_step_ms[i] = time_ms([&] { configurations[i]->train_step(); });
    compile_ms[i] = 1e3 * configurations[i]->model().jit_stats().compile_seconds;
  }
  auto in_round_order = [n](int round, std::size_t k) { return round % 2 == 0 ? k : n - 1 - k; };
  for (int round = 0; round < harness.options().warmup; ++round) {
    for (std::size_t k = 0; k < n; ++k) configurations[in_round_order(round, k)]->train_step();
  }
  std::vector<std::vector<double>> times_ms(n), cpu_ms(n);
  for (int round = 0; round < harness.options().repeats; ++round) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = in_round_order(round, k);
      const double cpu_before = process_cpu_ms();
      times_ms[i].push_back(time_ms([&] { configurations[i]->train_step(); }));
      cpu_ms[i].push_back(process_cpu_ms() - cpu_before);
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const int replicas = configurations[i]->replicas();
    const kestrel::JitStats stats = configurations[i]->model().jit_stats();
    Record record;
    record.name = "replica_step";
    record.params = config_params(w, replicas);
    record.timing = kestrel::bench::summarize(times_ms[i]);
    const double ms = record.timing.median_ms;
    record.figures = {{"gflops", kestrel::bench::gflops(w.training_gflop * 1e9, ms)},
                      {"samples_per_s", ms > 0 ? 1e3 * static_cast<double>(w.batch) / ms : 0.0},
                      {"ms_per_step", ms},
                      {"cpu_ms_per_step", kestrel::bench::summarize(cpu_ms[i]).median_ms},
                      {"rows_per_replica", static_cast<double>(w.batch / replicas)},
                      {"first_step_ms", first_step_ms[i]},
                      {"compile_ms", compile_ms[i]},
                      // 0 would mean the step ran eagerly; more than 1 that the jit recompiles a fixed batch.
                      {"jit_compiles", static_cast<double>(stats.compiles)}};
    kestrel::bench::print_child_record(record);
  }
  return 0;
}

// Peak-memory child: trains one configuration alone in this fresh process, its first step and the
// warm-up steps (at least 2): every step allocates alike, so the process reaches its peak within them.
// Prints a replica_peak_memory record; its timing is those steps after the first.
int run_memory_child(const Harness& harness, const Workload& w, int replicas) {
  setup_process();
  const double base_rss_mb = kestrel::bench::status_mb("VmRSS");
  Configuration configuration(w, replicas);
  configuration.train_step();
  std::vector<double> times_ms;
  for (int step = 0; step < std::max(harness.options().warmup, 2); ++step) {
    times_ms.push_back(time_ms([&] { configuration.train_step(); }));
  }
  Record record;
  record.name = "replica_peak_memory";
  record.params = config_params(w, replicas);
  record.timing = kestrel::bench::summarize(times_ms);
  record.figures = {{"peak_rss_mb", kestrel::bench::status_mb("VmHWM")},
                    {"base_rss_mb", base_rss_mb},
                    // What the compiled programs hold for their intermediates: one arena per replica.
                    {"arena_mb", static_cast<double>(configuration.model().jit_stats().arena_bytes) / kMiB},
                    {"steps", static_cast<double>(times_ms.size() + 1)}};
  kestrel::bench::print_child_record(record);
  return 0;
}

// "1,8" -> {1, 8}; empty when the list holds anything but positive counts.
std::vector<int> parse_counts(const std::string& list) {
  std::vector<int> counts;
  std::istringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    try {
      std::size_t used = 0;
      const int count = std::stoi(item, &used);
      if (used != item.size() || count < 1) return {};
      counts.push_back(count);
    } catch (const std::exception&) {
      return {};
    }
  }
  return counts;
}

int run_child(const Harness& harness, const std::string& name, const std::string& replica_list, bool peak_memory) {
  const Workload* workload = kestrel::bench::find_workload(name);
  const std::vector<int> counts = parse_counts(replica_list);
  bool valid = workload != nullptr && !counts.empty() && (!peak_memory || counts.size() == 1);
  for (int replicas : counts) valid = valid && workload->batch % replicas == 0;
  if (!valid) {
    std::cerr << "replica_bench: unknown workload '" << name << "', or replicas '" << replica_list
              << "' are not counts that divide its batch (one count for --peak-memory)\n";
    return 2;
  }
  return peak_memory ? run_memory_child(harness, *workload, counts.front())
                     : run_timing_child(harness, *workload, counts);
}

void print_progress(const Record& r) {
  std::cout << r.label() << ": ";
  if (r.name == "replica_step") {
    std::cout << fixed(r.timing.median_ms, 2) << " ms/step (min " << fixed(r.timing.min_ms, 2) << ", p90 "
              << fixed(r.timing.p90_ms, 2) << "), " << fixed(r.figure("gflops").value_or(0), 1) << " GFLOP/s, CPU "
              << fixed(r.figure("cpu_ms_per_step").value_or(0), 1) << " ms/step, first step "
              << fixed(r.figure("first_step_ms").value_or(0), 1) << " ms, compile "
              << fixed(r.figure("compile_ms").value_or(0), 1) << " ms";
  } else {
    std::cout << "peak RSS " << fixed(r.figure("peak_rss_mb").value_or(0), 0) << " MB (jit arenas "
              << fixed(r.figure("arena_mb").value_or(0), 0) << " MB) after " << fixed(r.figure("steps").value_or(0), 0)
              << " steps";
  }
  std::cout << std::endl;
}

void keep(Harness& harness, const std::vector<Record>& records) {
  for (const Record& r : records) {
    print_progress(r);
    harness.add(r);
  }
}

// One model's step times (one child, the selected configurations interleaved) and peak memories (a
// child per configuration); false when a child failed.
bool measure_model(Harness& harness, const Workload& w, int replicas) {
  bool all_ran = true;
  std::string timed;
  for (int count : {1, replicas}) {
    if (harness.selected(step_label(w, count))) timed += (timed.empty() ? "" : ",") + std::to_string(count);
  }
  const std::string peer = kestrel::bench::train_step_label(w, "eager", "float32");
  for (int round = 0; round < harness.rounds(); ++round) {
    if (!timed.empty()) {
      const auto records = kestrel::bench::records_from_child(harness, std::string("replica_step model=") + w.name,
                                                              {"--replica-child", w.name, "--replicas", timed});
      all_ran = all_ran && !records.empty();
      keep(harness, records);
    }
    // PyTorch eager on the same global batch, right after, so both see the same machine load.
    if (harness.selected(peer)) {
      harness.run_peer("train_step_peer.py", {"--threads", std::to_string(kestrel::bench::kTrainStepThreads)},
                       kestrel::bench::exact_labels_regex({peer}));
    }
  }
  for (int count : {1, replicas}) {
    const std::string label = memory_label(w, count);
    if (!harness.selected(label)) continue;
    auto record = kestrel::bench::measure_in_child(
        harness, label, {"--replica-child", w.name, "--replicas", std::to_string(count), "--peak-memory"});
    all_ran = all_ran && record.has_value();
    if (record) keep(harness, {*record});
  }
  return all_ran;
}

// all_reduce_sum over `replicas` lists of gradients shaped as the model's trainable weights: the
// reduction an eager replicated train step runs once per step, and an upper bound for a compiled
// one, which sums an embedding's gradient by gathering rows (jit::SparseCrossReplicaSum). The inputs are made once, outside the timing;
// each call allocates its outputs, as in a step. GB/s counts the bytes read, every replica's
// gradients once; `gb_per_s_with_writes` adds the sums written.
void measure_all_reduce(Harness& harness, const Workload& w, int replicas) {
  const Json params = {{"model", w.name}, {"replicas", replicas}, {"threads", kestrel::bench::kTrainStepThreads}};
  if (!harness.selected(kestrel::bench::case_label("all_reduce", params))) return;
  // The model only supplies the shapes; built without a strategy, eagerly.
  const kestrel::bench::TrainStep step = kestrel::bench::make_train_step(w, kestrel::bench::Mode::eager);
  const std::vector<kestrel::Variable> weights = step.model->trainable_weights();
  std::vector<std::vector<kestrel::Tensor>> gradients(static_cast<std::size_t>(replicas));
  double gradient_bytes = 0;  // one replica's
  for (int r = 0; r < replicas; ++r) {
    for (std::size_t k = 0; k < weights.size(); ++k) {
      const kestrel::random::Key key(static_cast<std::uint64_t>(r) * weights.size() + k);
      gradients[static_cast<std::size_t>(r)].push_back(kestrel::random::normal(weights[k].shape(), key));
      if (r == 0) gradient_bytes += static_cast<double>(gradients[0].back().nbytes());
    }
  }
  const double read_bytes = replicas * gradient_bytes;
  harness.measure(
      "all_reduce", params, [&] { kestrel::distribute::all_reduce_sum(gradients); },
      [&](const kestrel::bench::Timing& t) {
        return kestrel::bench::Figures{
            {"gb_per_s", kestrel::bench::gb_per_s(read_bytes, t.median_ms)},
            {"ms_per_call", t.median_ms},
            {"mb_read", read_bytes / kMiB},
            {"gb_per_s_with_writes", kestrel::bench::gb_per_s(read_bytes + gradient_bytes, t.median_ms)},
            {"tensors", static_cast<double>(weights.size())}};
      });
}

const Record* find_record(const Harness& harness, const std::string& label) {
  for (const Record& r : harness.records()) {
    if (r.label() == label) return &r;
  }
  return nullptr;
}

std::string cell(const Record* r, const char* key, int decimals) {
  if (r == nullptr) return "-";
  const auto value = r->figure(key);
  return value ? fixed(*value, decimals) : "-";
}

// numerator's figure over denominator's, when both have it.
std::optional<double> ratio(const Record* numerator, const Record* denominator, const char* key) {
  if (numerator == nullptr || denominator == nullptr) return std::nullopt;
  const auto a = numerator->figure(key), b = denominator->figure(key);
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

std::string ratio_cell(std::optional<double> value) { return value ? fixed(*value, 2) + "x" : "-"; }

// Cells right-aligned to their widths, the first left-aligned.
void print_row(const std::vector<std::string>& cells, const std::vector<std::size_t>& widths) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string gap(cells[i].size() < widths[i] ? widths[i] - cells[i].size() : 1, ' ');
    line += i == 0 ? cells[i] + gap : gap + cells[i];
  }
  std::cout << line << "\n";
}

void keep_verdict(Harness& harness, const std::string& verdict) {
  std::cout << verdict << "\n";
  harness.note(verdict);
}

// The table of 1 replica against 8, and the goals' verdicts (also kept as notes).
void report(Harness& harness, int replicas, const std::optional<FmaPeak>& peak) {
  const std::vector<std::size_t> widths = {11, 9, 10, 10, 8, 8, 10, 10, 8, 12, 12};
  const std::string many_text = std::to_string(replicas);
  bool header = false;
  std::vector<std::string> verdicts;
  for (std::string_view name : kModels) {
    const Workload& w = *kestrel::bench::find_workload(name);
    const Record* step_one = find_record(harness, step_label(w, 1));
    const Record* step_many = find_record(harness, step_label(w, replicas));
    const Record* memory_one = find_record(harness, memory_label(w, 1));
    const Record* memory_many = find_record(harness, memory_label(w, replicas));
    const Record* reduce = find_record(
        harness,
        kestrel::bench::case_label(
            "all_reduce", {{"model", w.name}, {"replicas", replicas}, {"threads", kestrel::bench::kTrainStepThreads}}));
    if (!step_one && !step_many && !memory_one && !memory_many && !reduce) continue;
    if (!header) {
      std::cout << "\n1 replica against " << replicas << " at the same global batch, under jit_compile:\n";
      print_row({"", "rows per", "step ms", "step ms", "step", "CPU", "peak MB", "peak MB", "peak", "all-reduce",
                 "all-reduce"},
                widths);
      print_row({"workload", "replica", "1", many_text, "ratio", "ratio", "1", many_text, "ratio", "ms", "% of step"},
                widths);
      header = true;
    }
    const auto step_ratio = ratio(step_many, step_one, "ms_per_step");
    const auto cpu_ratio = ratio(step_many, step_one, "cpu_ms_per_step");
    const auto memory_ratio = ratio(memory_many, memory_one, "peak_rss_mb");
    std::optional<double> reduce_share;
    if (reduce != nullptr && step_many != nullptr && step_many->timing.median_ms > 0) {
      reduce_share = reduce->timing.median_ms / step_many->timing.median_ms;
    }
    print_row({w.title, std::to_string(w.batch / replicas), cell(step_one, "ms_per_step", 2),
               cell(step_many, "ms_per_step", 2), ratio_cell(step_ratio), ratio_cell(cpu_ratio),
               cell(memory_one, "peak_rss_mb", 0), cell(memory_many, "peak_rss_mb", 0), ratio_cell(memory_ratio),
               cell(reduce, "ms_per_call", 2), reduce_share ? fixed(100 * *reduce_share, 1) + "%" : "-"},
              widths);
    const std::string title = w.title;
    if (step_ratio) {
      verdicts.push_back("step goal (" + title + ": " + many_text + " replicas' step at most " + fixed(kStepGoal, 2) +
                         "x one replica's): " + (*step_ratio <= kStepGoal ? "met" : "not met") + " [" +
                         fixed(step_many->timing.median_ms, 2) + " ms against " + fixed(step_one->timing.median_ms, 2) +
                         " ms: " + fixed(*step_ratio, 2) + "x]");
    }
    if (memory_ratio) {
      verdicts.push_back("memory goal (" + title + ": " + many_text + " replicas' peak RSS at most " +
                         fixed(kMemoryGoal, 2) +
                         "x one replica's): " + (*memory_ratio <= kMemoryGoal ? "met" : "not met") + " [" +
                         cell(memory_many, "peak_rss_mb", 0) + " MB against " + cell(memory_one, "peak_rss_mb", 0) +
                         " MB: " + fixed(*memory_ratio, 2) + "x]");
    }
    const Record* torch = nullptr;
    for (const Record& r : harness.records()) {
      if (r.label() == kestrel::bench::train_step_label(w, "eager", "float32") && r.source != "kestrel") torch = &r;
    }
    if (torch != nullptr && step_many != nullptr && step_many->timing.median_ms > 0) {
      const double speedup = torch->timing.median_ms / step_many->timing.median_ms;
      // Both do the same FLOPs, so a step at the FMA peak would be speedup / share faster: a goal
      // above that cannot be met on this machine.
      std::string at_peak;
      if (const auto rate = step_many->figure("gflops"); rate && peak && w.exact_flops) {
        const double share = kestrel::bench::fma_peak_fraction(*peak, *rate, kestrel::bench::kTrainStepThreads);
        if (share > 0) {
          at_peak = "; the step at " + fixed(100 * share, 0) + "% of the FMA peak, " + fixed(speedup / share, 2) +
                    "x at the peak";
        }
      }
      verdicts.push_back(
          "peer goal (" + title + ": " + many_text + " replicas' step at least " + fixed(kPeerGoal, 1) +
          "x faster than PyTorch eager at the same global batch): " + (speedup >= kPeerGoal ? "met" : "not met") +
          " [" + fixed(step_many->timing.median_ms, 2) + " ms against " + fixed(torch->timing.median_ms, 2) +
          " ms: " + fixed(speedup, 2) + "x" + at_peak + "]");
    }
    for (const Record* r : {step_one, step_many}) {
      if (r != nullptr && r->figure("jit_compiles").value_or(0) == 0) {
        harness.note(r->label() + ": nothing was compiled (jit_stats().compiles is 0), so the step ran eagerly");
      }
    }
  }
  if (header) {
    std::cout << "(step times from one process, the two configurations' steps interleaved; CPU ratio: the\n"
                 " same for the process's CPU time per step, the work done; peak MB: VmHWM of a process training\n"
                 " that configuration alone; all-reduce % of step: an all-reduce of every gradient, timed on\n"
                 " its own, against the "
              << replicas << "-replica step)\n";
  }
  if (!verdicts.empty()) std::cout << "\n";
  for (const std::string& verdict : verdicts) keep_verdict(harness, verdict);
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("replica_bench",
                  "BERT-tiny and GPT-tiny trained under jit_compile on 1 replica and on a local TPUStrategy's 8, at "
                  "the same global batch (step time, peak memory), and the all-reduce of their gradients");
  std::string child_workload;
  std::string child_replicas = "1";
  bool child_peak_memory = false;
  // Internal flags, hidden from --help: what a child process measures.
  kestrel::programs::CommandLine& cli = harness.cli();
  cli.add_option("--replica-child", child_workload, "internal: train this workload in this process").hidden();
  cli.add_option("--replicas", child_replicas, "internal: the child's replica counts, e.g. 1,8").hidden();
  cli.add_flag("--peak-memory", child_peak_memory, "internal: report the peak memory of one count").hidden();
  harness.offer_rounds();
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;
  if (!child_workload.empty()) {
    try {
      return run_child(harness, child_workload, child_replicas, child_peak_memory);
    } catch (const std::exception& e) {
      // The parent notes the failure; the error itself goes to stderr, which the parent shares.
      std::cerr << "replica_bench: " << child_workload << " on " << child_replicas << " replicas: " << e.what() << "\n";
      return 1;
    }
  }

  setup_process();
  const int replicas = tpu_replicas();
  const std::optional<FmaPeak> peak = kestrel::bench::add_fma_peak(harness);
  bool all_ran = true;
  for (std::string_view name : kModels) {
    all_ran = measure_model(harness, *kestrel::bench::find_workload(name), replicas) && all_ran;
  }
  for (std::string_view name : kModels) measure_all_reduce(harness, *kestrel::bench::find_workload(name), replicas);
  report(harness, replicas, peak);
  const int exit_code = harness.finish();
  return all_ran ? exit_code : 1;
}
