// What workers cost: BERT-tiny and GPT-tiny (the reference workloads) trained under jit_compile on 8
// replicas in sync laid out as 1 x 8, 2 x 4 and 4 x 2 (MPI ranks x local replicas, all on this
// machine), at the same global batch; per step, the time, the part of it spent in the workers'
// collectives, and the bytes each worker sent. Then a projection to TPU pod slices of more hosts.
//
//   ./build/bench/multi_worker_bench                             # both models, three layouts, the projection
//   ./build/bench/multi_worker_bench --filter gpt_tiny --link-gb-per-s 100 --json-out workers.json
//
// Cases (the 2 cores shared out: threads_per_worker = max(1, 2 / W)):
//   worker_step model=… batch=… workers=W local_replicas=N   a step of the model compiled in the scope of
//                                                            MultiWorkerMirroredStrategy({.local_replicas = N})
//                                                            on W ranks (mpirun -np W; 1: no mpirun)
// Figures: ms_per_step (median; the chief's), all_reduce_ms_per_step (inside MPI calls, waiting for the
// other workers included: Workers::traffic), compute_ms_per_step (the rest), bytes_sent_per_step (per
// worker). On one machine the workers share its cores, so W x N layouts compare the collectives'
// overhead, not a speed-up.
//
// The projection (weak scaling, as a pod slice grows): every host keeps 8 cores and its share of the
// global batch, so its compute per step is the measured 1 x 8 step's (or --host-compute-ms: a TPU
// host computes far faster than this CPU, which moves the point where scaling stops); the gradients (4 bytes a
// parameter) are summed by a ring all-reduce, in which each host sends and receives
// 2 (H - 1) / H x bytes over a link of --link-gb-per-s, plus 2 (H - 1) hops of --link-latency-us.
// Efficiency = compute / (compute + all-reduce): where it falls, more hosts stop paying.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/child_process.h"
#include "bench/harness.h"
#include "bench/train_step_workloads.h"
#include "framework/core/thread_pool.h"
#include "framework/logging/logging.h"
#include "strategies/multi_worker_mirrored_strategy.h"
#include "strategies/workers.h"

namespace {

using kestrel::bench::fixed;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Record;
using kestrel::bench::Workload;

constexpr std::string_view kModels[] = {"bert_tiny", "gpt_tiny"};
constexpr int kReplicasInSync = 8;
constexpr int kLayouts[] = {1, 2, 4};  // workers; each runs 8 / workers local replicas

// The machine's cores (the reference's 2) shared out: each of W workers gets 2 / W threads, at least 1.
int threads_per_worker(int workers) { return std::max(1, kestrel::bench::kTrainStepThreads / workers); }

Json layout_params(const Workload& w, int workers) {
  return {{"model", w.name},
          {"batch", w.batch},
          {"workers", workers},
          {"local_replicas", kReplicasInSync / workers},
          {"threads_per_worker", threads_per_worker(workers)}};
}

// One process of the layout (every rank runs this): times the steps, and the chief prints the record.
int run_worker(const Harness& harness, const Workload& w) {
  if (std::getenv("KESTREL_LOG_LEVEL") == nullptr) kestrel::logging::set_level(spdlog::level::warn);
  const int workers = kestrel::distribute::Workers::of_this_job()->count();
  kestrel::set_num_threads(threads_per_worker(workers));
  const kestrel::distribute::MultiWorkerMirroredStrategy strategy({.local_replicas = kReplicasInSync / workers});
  kestrel::bench::TrainStep step;
  {
    const kestrel::distribute::DistributionScope scope(strategy);
    step = kestrel::bench::make_train_step(w, kestrel::bench::Mode::jit);
  }
  const auto train = [&] {
    const kestrel::distribute::DistributionScope scope(strategy);
    step.model->train_on_batch(step.inputs, step.labels);
  };
  train();  // traces and compiles
  for (int i = 0; i < harness.options().warmup; ++i) train();
  std::vector<double> step_ms, collective_ms;
  double bytes_sent = 0;
  for (int i = 0; i < harness.options().repeats; ++i) {
    const kestrel::distribute::Workers::Traffic before = strategy.workers().traffic();
    const auto start = std::chrono::steady_clock::now();
    train();
    step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    const kestrel::distribute::Workers::Traffic after = strategy.workers().traffic();
    collective_ms.push_back(1e3 * (after.seconds - before.seconds));
    bytes_sent = static_cast<double>(after.bytes_sent - before.bytes_sent);
  }
  if (!strategy.workers().is_chief()) return 0;
  Record record;
  record.name = "worker_step";
  record.params = layout_params(w, workers);
  record.timing = kestrel::bench::summarize(step_ms);
  const double all_reduce_ms = kestrel::bench::summarize(collective_ms).median_ms;
  record.figures = {{"ms_per_step", record.timing.median_ms},
                    {"all_reduce_ms_per_step", all_reduce_ms},
                    {"compute_ms_per_step", record.timing.median_ms - all_reduce_ms},
                    {"bytes_sent_per_step", bytes_sent},
                    {"gradient_bytes", 4.0 * static_cast<double>(step.model->count_params())}};
  kestrel::bench::print_child_record(record);
  return 0;
}

struct Link {
  double gb_per_s;
  double latency_us;
  double host_compute_ms;  // 0: the measured 1 x 8 step's
};

// The projection's table for one model, from its 1 x 8 step.
void print_projection(const Record& one_host, const Link& link) {
  const double compute_ms =
      link.host_compute_ms > 0 ? link.host_compute_ms : one_host.figure("compute_ms_per_step").value_or(0);
  const double bytes = one_host.figure("gradient_bytes").value_or(0);
  std::cout << "\nprojection for " << one_host.params["model"].get<std::string>() << ": " << fixed(compute_ms, 1)
            << " ms of compute per host per step ("
            << (link.host_compute_ms > 0 ? "--host-compute-ms" : "measured, 1 x 8") << "), " << fixed(bytes / 1e6, 2)
            << " MB of gradients; ring all-reduce over " << fixed(link.gb_per_s, 1) << " GB/s links, "
            << fixed(link.latency_us, 0) << " us a hop\n";
  std::cout << "  hosts  cores  all-reduce ms  step ms  efficiency\n";
  for (int hosts : {1, 2, 4, 8, 16, 32, 64, 128, 256}) {
    const double h = hosts;
    const double all_reduce_ms =
        hosts == 1 ? 0.0
                   : 2.0 * (h - 1) / h * bytes / (link.gb_per_s * 1e9) * 1e3 + 2.0 * (h - 1) * link.latency_us * 1e-3;
    const double step_ms = compute_ms + all_reduce_ms;
    const double efficiency = step_ms > 0 ? compute_ms / step_ms : 0;
    std::printf("  %5d  %5d  %13.2f  %7.2f  %9.1f%%\n", hosts, hosts * kReplicasInSync, all_reduce_ms, step_ms,
                100 * efficiency);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("multi_worker_bench",
                  "8 replicas in sync as 1 x 8, 2 x 4 and 4 x 2 MPI ranks x local replicas: step, all-reduce and bytes "
                  "per worker, and a projection to larger pod slices");
  std::string worker_model;
  std::string mpirun = "mpirun";
  Link link{.gb_per_s = 12.5, .latency_us = 10, .host_compute_ms = 0};
  harness.cli().add_option("--worker-child", worker_model, "(internal) run as one worker of a layout, for this model");
  harness.cli().add_option("--mpirun", mpirun, "the MPI launcher");
  harness.cli().add_option("--link-gb-per-s", link.gb_per_s,
                           "the projection's link bandwidth per host (12.5: 100 Gb Ethernet)");
  harness.cli().add_option("--link-latency-us", link.latency_us, "the projection's latency per ring hop");
  harness.cli().add_option("--host-compute-ms", link.host_compute_ms,
                           "the projection's compute per host per step (a real TPU host's, say); 0: this machine's");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  if (!worker_model.empty()) {
    const Workload* w = kestrel::bench::find_workload(worker_model);
    if (w == nullptr) {
      std::cerr << "multi_worker_bench: unknown workload '" << worker_model << "'\n";
      return 2;
    }
    return run_worker(harness, *w);
  }

  for (std::string_view name : kModels) {
    const Workload& w = *kestrel::bench::find_workload(name);
    std::optional<Record> one_host;
    for (int workers : kLayouts) {
      const std::string label = kestrel::bench::case_label("worker_step", layout_params(w, workers));
      if (!harness.selected(label)) continue;
      std::vector<std::string> launcher;
      if (workers > 1) {
        launcher = {mpirun, "--allow-run-as-root",  "--oversubscribe", "--bind-to", "none",
                    "-np",  std::to_string(workers)};
      }
      const std::vector<Record> records =
          kestrel::bench::records_from_child(harness, label, {"--worker-child", w.name}, launcher);
      for (const Record& r : records) {
        std::cout << r.label() << ": " << fixed(r.timing.median_ms, 2) << " ms/step, of which all-reduce "
                  << fixed(r.figure("all_reduce_ms_per_step").value_or(0), 2) << " ms; "
                  << fixed(r.figure("bytes_sent_per_step").value_or(0) / 1e6, 2) << " MB sent per worker per step"
                  << std::endl;
        harness.add(r);
        if (workers == 1) one_host = r;
      }
    }
    // The projection is a function of the 1 x 8 record's figures, which the JSON keeps.
    if (one_host) print_projection(*one_host, link);
  }
  return harness.finish();
}
