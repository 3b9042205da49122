// Kernel benchmarks through Kestrel's public ops: float32 matmul in GFLOP/s, an elementwise
// chain, softmax and layer norm in GB/s, each beside PyTorch and NumPy measured in the same run
// by peers/kernels_peer.py, which runs right after each group of Kestrel's cases.
//
//   ./build/bench/kernels_bench                                   # every case, peers included
//   ./build/bench/kernels_bench --filter 'matmul.*n=1024' --json-out kernels.json
//   ./build/bench/kernels_bench --no-peer --repeats 10
//
// Rates come from the median time. GB/s counts the bytes each op reads and writes (a chain of
// four ops over n floats moves 4 x 2 x 4n bytes), so they compare with the machine's copy bandwidth.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kestrel.h"

namespace {

using kestrel::Tensor;
using kestrel::bench::Figures;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Timing;
namespace ops = kestrel::ops;
namespace random = kestrel::random;

const std::vector<std::int64_t> kMatmulSizes = {256, 512, 1024, 2048};
const std::vector<int> kMatmulThreads = {1, 2};
constexpr std::int64_t kElementwiseSize = std::int64_t{1} << 24;  // 16M floats, 64 MB: far beyond the caches
constexpr std::int64_t kRows = 4096;
constexpr std::int64_t kCols = 1024;
constexpr int kThreads = 2;  // the memory-bound cases run on both cores, the reference setting
constexpr double kFloatBytes = 4.0;
// The goal: at sizes where the kernel, not overhead, decides, matmul keeps pace with the best peer.
constexpr std::int64_t kGoalMinSize = 1024;
constexpr double kGoalRatio = 0.85;

std::string join(const auto& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

// Runs the peer on the cases just measured (those --filter kept), so both sides see the same
// machine load; on a shared machine, load drifts within seconds.
void run_peer_on(Harness& harness, const std::vector<std::string>& labels) {
  std::vector<std::string> selected;
  for (const std::string& label : labels) {
    if (harness.selected(label)) selected.push_back(label);
  }
  if (selected.empty()) return;
  harness.run_peer("kernels_peer.py",
                   {"--matmul-sizes", join(kMatmulSizes), "--matmul-threads", join(kMatmulThreads),
                    "--elementwise-size", std::to_string(kElementwiseSize), "--rows", std::to_string(kRows),
                    "--cols", std::to_string(kCols), "--threads", std::to_string(kThreads)},
                   kestrel::bench::exact_labels_regex(selected));
}

void bench_matmul(Harness& harness) {
  for (std::int64_t n : kMatmulSizes) {
    Tensor a = random::normal({n, n}, random::Key(0));
    Tensor b = random::normal({n, n}, random::Key(1));
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    std::vector<std::string> labels;
    for (int threads : kMatmulThreads) {
      kestrel::set_num_threads(threads);
      Json params = {{"n", n}, {"threads", threads}};
      labels.push_back(kestrel::bench::case_label("matmul", params));
      harness.measure(
          "matmul", params, [&] { Tensor c = ops::matmul(a, b); },
          [&](const Timing& t) { return Figures{{"gflops", kestrel::bench::gflops(flops, t.median_ms)}}; });
    }
    run_peer_on(harness, labels);
  }
}

void bench_relu_chain(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  Tensor x = random::normal({kElementwiseSize}, random::Key(2));
  Tensor a = Tensor::scalar(1.5);
  Tensor b = Tensor::scalar(-0.25);
  Tensor c = Tensor::scalar(0.5);
  // multiply, add, relu, multiply: each reads n floats and writes n floats.
  const double bytes = 4 * 2 * kFloatBytes * static_cast<double>(kElementwiseSize);
  const Json params = {{"n", kElementwiseSize}, {"threads", kThreads}};
  harness.measure(
      "relu_chain", params, [&] { Tensor y = ops::multiply(ops::relu(ops::add(ops::multiply(x, a), b)), c); },
      [&](const Timing& t) { return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}}; });
  run_peer_on(harness, {kestrel::bench::case_label("relu_chain", params)});
}

void bench_softmax(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  Tensor x = random::normal({kRows, kCols}, random::Key(3));
  const double bytes = 2 * kFloatBytes * static_cast<double>(kRows * kCols);
  const Json params = {{"rows", kRows}, {"cols", kCols}, {"threads", kThreads}};
  harness.measure(
      "softmax", params, [&] { Tensor y = ops::softmax(x); },
      [&](const Timing& t) { return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}}; });
  run_peer_on(harness, {kestrel::bench::case_label("softmax", params)});
}

void bench_layer_norm(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  Tensor x = random::normal({kRows, kCols}, random::Key(4));
  Tensor gamma = random::normal({kCols}, random::Key(5), 1.0, 0.1);
  Tensor beta = random::normal({kCols}, random::Key(6), 0.0, 0.1);
  const double bytes = kFloatBytes * static_cast<double>(2 * kRows * kCols + 2 * kCols);
  const Json params = {{"rows", kRows}, {"cols", kCols}, {"threads", kThreads}};
  harness.measure(
      "layer_norm", params, [&] { Tensor y = ops::layer_norm(x, gamma, beta, {.epsilon = 1e-5}); },
      [&](const Timing& t) { return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}}; });
  run_peer_on(harness, {kestrel::bench::case_label("layer_norm", params)});
}

// States the matmul goal's verdict from the ratios of this run, and keeps it in the JSON notes.
void report_matmul_goal(Harness& harness) {
  std::vector<double> ratios;
  std::string detail;
  for (std::int64_t n : kMatmulSizes) {
    if (n < kGoalMinSize) continue;
    for (int threads : kMatmulThreads) {
      const std::string label = kestrel::bench::case_label("matmul", {{"n", n}, {"threads", threads}});
      if (auto ratio = harness.ratio_to_best_peer(label)) {
        ratios.push_back(*ratio);
        detail += (detail.empty() ? "" : ", ") + ("n=" + std::to_string(n) + "/" + std::to_string(threads) + "t ") +
                  std::to_string(static_cast<int>(100 * *ratio + 0.5)) + "%";
      }
    }
  }
  if (ratios.empty()) return;
  bool met = true;
  for (double r : ratios) met = met && r >= kGoalRatio;
  std::string verdict = std::string("matmul goal (n >= ") + std::to_string(kGoalMinSize) + ": Kestrel >= " +
                        std::to_string(static_cast<int>(100 * kGoalRatio)) + "% of the best peer's GFLOP/s): " +
                        (met ? "met" : "not met") + " [" + detail + "]";
  std::cout << "\n" << verdict << "\n";
  harness.note(verdict);
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("kernels_bench", "Kestrel's kernels (matmul, elementwise chain, softmax, layer norm) beside "
                                   "PyTorch and NumPy, measured in the same run");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  bench_matmul(harness);
  bench_relu_chain(harness);
  bench_softmax(harness);
  bench_layer_norm(harness);

  harness.print_comparison(std::cout);
  report_matmul_goal(harness);
  return harness.finish();
}
