#include "bench/fma_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "framework/core/cpu_capability.h"

namespace kestrel::bench {
namespace {

#if defined(__x86_64__)

// acc = acc * kScale + kShift converges to 1 from any start, so no lane overflows or turns
// denormal (which would slow the FMAs down) however long the loop runs.
constexpr float kScale = 0.999f;
constexpr float kShift = 0.001f;

constexpr int kAvx512Accumulators = 24;
constexpr int kAvx2Accumulators = 12;

// Each loop returns the sum of its accumulators, which the caller keeps (keep()). Every loop
// over the accumulators is unrolled by pragma, so the array becomes registers: left rolled, GCC
// keeps it on the stack and swaps the loops, and the probe would time loads and stores.
__attribute__((target("avx512f"), noinline)) float fma_loop_avx512(std::int64_t iterations) {
  __m512 acc[kAvx512Accumulators];
#pragma GCC unroll 24
  for (int i = 0; i < kAvx512Accumulators; ++i) {
    acc[i] = _mm512_set1_ps(static_cast<float>(i));
    asm("" : "+v"(acc[i]));  // hides the start: clang folds an accumulator that starts at 1.0, a fixed point
  }
  const __m512 scale = _mm512_set1_ps(kScale);
  const __m512 shift = _mm512_set1_ps(kShift);
  for (std::int64_t trip = 0; trip < iterations; ++trip) {
#pragma GCC unroll 24
    for (int i = 0; i < kAvx512Accumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 24
  for (int i = 1; i < kAvx512Accumulators; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

__attribute__((target("avx2,fma"), noinline)) float fma_loop_avx2(std::int64_t iterations) {
  __m256 acc[kAvx2Accumulators];
#pragma GCC unroll 24
  for (int i = 0; i < kAvx2Accumulators; ++i) {
    acc[i] = _mm256_set1_ps(static_cast<float>(i));
    asm("" : "+v"(acc[i]));  // hides the start: clang folds an accumulator that starts at 1.0, a fixed point
  }
  const __m256 scale = _mm256_set1_ps(kScale);
  const __m256 shift = _mm256_set1_ps(kShift);
  for (std::int64_t trip = 0; trip < iterations; ++trip) {
#pragma GCC unroll 24
    for (int i = 0; i < kAvx2Accumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], scale, shift);
  }
  __m256 sum = acc[0];
#pragma GCC unroll 24
  for (int i = 1; i < kAvx2Accumulators; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

bool cpu_has(FmaIsa isa) {
  if (isa == FmaIsa::avx512f) return __builtin_cpu_supports("avx512f");
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

float fma_loop(FmaIsa isa, std::int64_t iterations) {
  return isa == FmaIsa::avx512f ? fma_loop_avx512(iterations) : fma_loop_avx2(iterations);
}

#else

bool cpu_has(FmaIsa) { return false; }
float fma_loop(FmaIsa, std::int64_t) { return 0; }

#endif

// The all-threads peak over the 1-thread peak, per thread, outside which fma_peak_warning speaks up:
// cores that each have their own FMA units scale by about the thread count.
constexpr double kLowScaling = 0.75;
constexpr double kHighScaling = 1.1;
// Probes add_fma_peak takes at most while the peak scales outside those bounds, and its pause
// between them.
constexpr int kMaxProbes = 3;
constexpr std::chrono::seconds kPauseBetweenProbes{2};

// Uses a loop's result as benchmark::DoNotOptimize does. The FMAs have no other effect, so with
// the result unused (or only stored where nothing reads it) clang deletes the whole loop.
void keep(float value) { asm volatile("" : : "r,m"(value) : "memory"); }

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One run of `iterations` trips on each of `threads` threads, all released at once; the wall time
// from the release until the last thread is done. The calling thread runs one of the loops, so
// `threads` threads compute and none waits on a core.
double run_ms(FmaIsa isa, std::int64_t iterations, int threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back([&] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      keep(fma_loop(isa, iterations));
    });
  }
  while (ready.load() < threads - 1) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  keep(fma_loop(isa, iterations));
  for (std::thread& worker : workers) worker.join();
  return elapsed_ms(start);
}

// The loop count whose single-thread run lasts at least min_ms: long enough that starting threads
// and the clock's resolution vanish in it.
std::int64_t calibrate(FmaIsa isa, double min_ms) {
  std::int64_t iterations = 1 << 14;
  while (iterations < (std::int64_t{1} << 40)) {
    const double ms = run_ms(isa, iterations, 1);
    if (ms >= min_ms) break;
    // Jump most of the way at once, then double: a first run of a few microseconds says little.
    const double factor = ms > 1.0 ? min_ms / ms * 1.05 : 2.0;
    iterations = static_cast<std::int64_t>(static_cast<double>(iterations) * std::max(factor, 2.0));
  }
  return iterations;
}

Timing time_runs(FmaIsa isa, std::int64_t iterations, int threads, int repeats) {
  std::vector<double> times_ms;
  for (int r = 0; r < repeats; ++r) times_ms.push_back(run_ms(isa, iterations, threads));
  return summarize(std::move(times_ms));
}

}  // namespace

std::string to_string(FmaIsa isa) { return isa == FmaIsa::avx512f ? "avx512f" : "avx2_fma"; }

std::optional<FmaIsa> best_fma_isa() {
  for (FmaIsa isa : {FmaIsa::avx512f, FmaIsa::avx2_fma}) {
    if (cpu_has(isa)) return isa;
  }
  return std::nullopt;
}

int fma_accumulators(FmaIsa isa) {
#if defined(__x86_64__)
  return isa == FmaIsa::avx512f ? kAvx512Accumulators : kAvx2Accumulators;
#else
  return 0;
#endif
}

int fma_lanes(FmaIsa isa) { return isa == FmaIsa::avx512f ? 16 : 8; }

std::optional<FmaIsa> default_fma_isa() {
  std::optional<FmaIsa> isa = best_fma_isa();
  // Pinned below AVX-512, Kestrel's kernels and oneDNN's run in 256-bit registers, and so does the
  // peak their GFLOP/s is measured against.
  if (isa == FmaIsa::avx512f && cpu_capability() < CpuCapability::avx512) isa = FmaIsa::avx2_fma;
  return isa;
}

std::optional<FmaPeak> measure_fma_peak(const FmaPeakOptions& options) {
  const std::optional<FmaIsa> isa = options.isa ? options.isa : default_fma_isa();
  if (!isa || !cpu_has(*isa)) return std::nullopt;
  FmaPeak peak;
  peak.isa = *isa;
  peak.accumulators = fma_accumulators(*isa);
  peak.threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  peak.threads = std::max(peak.threads, 1);
  peak.iterations = calibrate(*isa, options.min_run_ms);
  const int repeats = std::max(options.repeats, 1);
  peak.one_thread = time_runs(*isa, peak.iterations, 1, repeats);
  peak.all_threads = time_runs(*isa, peak.iterations, peak.threads, repeats);
  // Each trip is one FMA (2 FLOPs) per lane of every accumulator.
  const double flops_per_thread = 2.0 * fma_lanes(*isa) * peak.accumulators * static_cast<double>(peak.iterations);
  peak.gflops_1_thread = gflops(flops_per_thread, peak.one_thread.median_ms);
  peak.gflops_all_threads = gflops(flops_per_thread * peak.threads, peak.all_threads.median_ms);
  peak.gflops_1_thread_best = gflops(flops_per_thread, peak.one_thread.min_ms);
  peak.gflops_all_threads_best = gflops(flops_per_thread * peak.threads, peak.all_threads.min_ms);
  return peak;
}

double fma_peak_fraction(const FmaPeak& peak, double gflops, int threads) {
  double at_threads = peak.gflops_all_threads;
  if (threads <= 1) {
    at_threads = peak.gflops_1_thread;
  } else if (threads < peak.threads) {
    at_threads = peak.gflops_all_threads * threads / peak.threads;
  }
  return at_threads > 0 ? gflops / at_threads : 0.0;
}

std::optional<std::string> fma_peak_warning(const FmaPeak& peak) {
  if (peak.threads <= 1 || peak.gflops_1_thread <= 0) return std::nullopt;
  const double scaling = peak.gflops_all_threads / peak.gflops_1_thread;
  // Cores that share one FMA unit (SMT siblings) scale by about 1x too; a reader can tell them
  // apart by the fastest runs, which other work spares now and then.
  if (scaling < kLowScaling * peak.threads) {
    return "the FMA peak on " + std::to_string(peak.threads) + " threads is only " + fixed(scaling, 2) +
           "x the 1-thread peak (fastest runs " + fixed(peak.gflops_all_threads_best / peak.gflops_1_thread_best, 2) +
           "x): other work was likely running on the cores, so shares of the all-cores peak read high";
  }
  if (scaling > kHighScaling * peak.threads) {
    return "the FMA peak on " + std::to_string(peak.threads) + " threads is " + fixed(scaling, 2) +
           "x the 1-thread peak, more than the threads can give: the 1-thread runs were slowed by other work";
  }
  return std::nullopt;
}

Record fma_peak_record(const FmaPeak& peak) {
  Record record;
  record.name = "fma_peak";
  record.params = Json{{"isa", to_string(peak.isa)}, {"accumulators", peak.accumulators}, {"threads", peak.threads}};
  record.timing = peak.all_threads;
  record.figures = {{"gflops_1_thread", peak.gflops_1_thread},
                    {"gflops_all_threads", peak.gflops_all_threads},
                    {"scaling", peak.gflops_1_thread > 0 ? peak.gflops_all_threads / peak.gflops_1_thread : 0.0},
                    {"gflops_1_thread_best", peak.gflops_1_thread_best},
                    {"gflops_all_threads_best", peak.gflops_all_threads_best}};
  return record;
}

std::optional<FmaPeak> add_fma_peak(Harness& harness, const FmaPeakOptions& options) {
  std::optional<FmaPeak> peak = measure_fma_peak(options);
  if (!peak) {
    harness.note("no FMA peak: the CPU has neither AVX-512F nor AVX2 with FMA, so no fma_peak_fraction is reported");
    return std::nullopt;
  }
  // Other work on a shared machine comes in bursts: a probe that scaled wrongly is taken again after
  // a pause, and a probe that scaled rightly, or else the highest all-threads peak, stands (other
  // work only ever lowers what the cores show).
  int probes = 1;
  for (; fma_peak_warning(*peak) && probes < kMaxProbes; ++probes) {
    std::this_thread::sleep_for(kPauseBetweenProbes);
    std::optional<FmaPeak> again = measure_fma_peak(options);
    if (!again) break;  // only the CPU check fails it, and that passed the first time
    if (!fma_peak_warning(*again) || again->gflops_all_threads > peak->gflops_all_threads) peak = again;
  }
  std::cout << "float32 FMA peak (" << to_string(peak->isa) << ", " << peak->accumulators << " accumulators, median of "
            << peak->one_thread.repeats << " runs): " << fixed(peak->gflops_1_thread, 1) << " GFLOP/s on 1 thread, "
            << fixed(peak->gflops_all_threads, 1) << " GFLOP/s on " << peak->threads << " threads ("
            << fixed(peak->gflops_all_threads / std::max(peak->gflops_1_thread, 1e-9), 2) << "x); fastest runs "
            << fixed(peak->gflops_1_thread_best, 1) << " and " << fixed(peak->gflops_all_threads_best, 1)
            << (probes > 1 ? "; kept after " + std::to_string(probes) + " probes" : "") << std::endl;
  if (auto warning = fma_peak_warning(*peak)) {
    std::cout << "  " << *warning << std::endl;
    harness.note(*warning);
  }
  harness.add(fma_peak_record(*peak));
  return peak;
}

}  // namespace kestrel::bench
