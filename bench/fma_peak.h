// The machine's float32 FMA peak, measured: what the benches' GFLOP/s are a fraction of.
//
//   std::optional<bench::FmaPeak> peak = bench::measure_fma_peak();   // nullopt without AVX2 + FMA
//   // a 2-core Zen 5, both cores free: isa avx512f, gflops_1_thread 281.6, gflops_all_threads 553.5
//   double share = bench::fma_peak_fraction(*peak, 401.7, 2);         // 0.73: 73% of the 2-thread peak
//
//   std::optional<bench::FmaPeak> peak = bench::add_fma_peak(harness);  // measured, printed, recorded
//
// The probe runs independent chains of fused multiply-adds on registers only (no loads, no stores),
// in 512-bit registers where the CPU has AVX-512F, else in 256-bit ones with AVX2 and FMA, chosen at
// run time so one binary runs on every x86-64. It runs on one thread, then on every logical core at
// once (one loop per thread), each the median of a few repeats. No matmul or convolution can beat it;
// a kernel's GFLOP/s over it is how much of the cores' arithmetic the kernel keeps busy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench/harness.h"

namespace kestrel::bench {

/// The instruction sets the probe can run.
enum class FmaIsa { avx2_fma, avx512f };

/// "avx2_fma" or "avx512f": the ISA as the fma_peak record names it.
std::string to_string(FmaIsa isa);

/// The widest FMA this CPU runs, nullopt when it has neither AVX-512F nor AVX2 with FMA (or is not x86-64).
std::optional<FmaIsa> best_fma_isa();

/// best_fma_isa(), but AVX2's when KESTREL_CPU_CAPABILITY pins Kestrel's kernels below AVX-512: the
/// peak of the registers the kernels run in.
std::optional<FmaIsa> default_fma_isa();

/// Independent accumulators the probe's loop keeps in registers: 24 of AVX-512's 32, and 12 of AVX2's
/// 16 (24 would not fit: the spills' loads and stores would be measured instead of the FMAs). Both
/// exceed the FMA latency times the FMA units of current cores (4 x 2), so the units never wait.
int fma_accumulators(FmaIsa isa);

/// Float32 lanes in one register: 16 for AVX-512, 8 for AVX2.
int fma_lanes(FmaIsa isa);

struct FmaPeakOptions {
  int repeats = 5;            ///< runs per thread count; the median is reported
  int threads = 0;            ///< the "all cores" run's threads; 0: every logical core
  double min_run_ms = 50;     ///< each run's length, found by doubling the loop count
  std::optional<FmaIsa> isa;  ///< nullopt: default_fma_isa()
};

struct FmaPeak {
  FmaIsa isa = FmaIsa::avx2_fma;
  int accumulators = 0;
  int threads = 1;                ///< the threads of the all-cores run
  std::int64_t iterations = 0;    ///< loop trips per run, on each thread
  double gflops_1_thread = 0;     ///< from the median run on one thread
  double gflops_all_threads = 0;  ///< from the median run on `threads` threads, all threads' FLOPs counted
  // The fastest runs: on a machine shared with other work the medians fall as that work takes cores
  // (the all-threads runs most), while the fastest show what the cores can do.
  double gflops_1_thread_best = 0;
  double gflops_all_threads_best = 0;
  Timing one_thread;  ///< the runs' times, ms
  Timing all_threads;
};

/// Runs the probe. Nullopt when the CPU has no FMA the probe can run (options.isa, when given, must
/// be one the CPU has; otherwise nullopt too).
std::optional<FmaPeak> measure_fma_peak(const FmaPeakOptions& options = {});

/// gflops over the peak at that thread count: the one-thread peak for 1 thread, the all-cores peak
/// for as many threads or more, and between them that peak's share for `threads` (one core alone may
/// clock higher than all at once, so 1 thread is measured rather than taken as a share). 0 when the
/// peak is 0.
double fma_peak_fraction(const FmaPeak& peak, double gflops, int threads);

/// The record a bench's JSON keeps: name "fma_peak", params isa, accumulators and threads, the
/// all-cores runs' timing, figures gflops_1_thread, gflops_all_threads (medians), their ratio
/// `scaling`, and gflops_1_thread_best, gflops_all_threads_best (the fastest runs).
Record fma_peak_record(const FmaPeak& peak);

/// A sanity check that needs no units: the all-threads peak should be about `threads` times the
/// 1-thread one. Returns why not when it is under 0.75x or over 1.1x that (other work on the cores,
/// or cores that share their FMA units), else nullopt.
std::optional<std::string> fma_peak_warning(const FmaPeak& peak);

/// Measures the peak, again while fma_peak_warning objects (other work on the cores comes and goes;
/// three probes at most), prints one line about the probe kept (and fma_peak_warning's, also kept as
/// a note), and adds its record to the harness; without a usable FMA notes so and returns nullopt
/// (the benches then report no fractions).
std::optional<FmaPeak> add_fma_peak(Harness& harness, const FmaPeakOptions& options = {});

}  // namespace kestrel::bench
