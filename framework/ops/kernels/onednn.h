// oneDNN, the library matmul and convolution run on: its engine, a stream per thread, a scratchpad
// per thread, its instruction-set cap, and the rule that keeps it on Kestrel's threads.
//
//   onednn::OnCallingThread one_thread;   // around every oneDNN call, primitive creation included
//   dnnl::engine engine(onednn::engine(), /*weak=*/true);
//   dnnl::stream stream(onednn::stream(), /*weak=*/true);
//   primitive.execute(stream, {..., {DNNL_ARG_SCRATCHPAD, dnnl::memory(scratch_desc, engine,
//                                        onednn::scratchpad(scratch_desc.get_size()))}});
//
// Threads: oneDNN always runs on the thread that calls it. Kestrel's kernels split their work over
// Kestrel's thread pool (kernels/gemm.cpp tiles a product), so there is one set of threads:
// replicas under a SerialKernelsScope stay on their own threads, and no OpenMP team exists to
// oversubscribe the cores or spin-wait on them. Debian's oneDNN runs on OpenMP (libgomp), which
// reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded: an idle team spins for ~3 ms
// after every parallel region unless the user set OMP_WAIT_POLICY=PASSIVE, no call can change
// that later (omp_set_dynamic only lets it shrink teams, which would change the results), and a
// team that never starts cannot spin. Measured with oneDNN threading the whole product on
// num_threads() OpenMP threads instead (train_step_bench, jit, 2 threads, median of 3 alternated
// runs, Zen 3 under other load): BERT-tiny 339 ms/step on Kestrel's pool, 324 ms with
// OMP_WAIT_POLICY=PASSIVE, 727 ms with libgomp's default spinning (7.3 s of CPU against 3.5 s);
// MLP 15, 20 and 66 ms. Results depend on the shape, the ISA level and kestrel::num_threads()
// (which decides the tiles), not on which thread runs a tile.
//
// This header names oneDNN's C handle types without including oneDNN: no Kestrel header may, as
// oneDNN is a private dependency.
#pragma once

#include <cstddef>

#include "framework/core/cpu_capability.h"

struct dnnl_engine;
struct dnnl_stream;

namespace kestrel::kernels::onednn {

/// The process-wide CPU engine; the first call caps oneDNN's instruction sets (cap_isa).
dnnl_engine* engine();

/// The calling thread's stream on engine() (a oneDNN stream is not shared between threads).
dnnl_stream* stream();

/// At least `bytes` of 64-byte-aligned memory owned by the calling thread, for the scratchpad of
/// the primitive it is about to run (primitives are built with a user-provided scratchpad, so that
/// one primitive runs on several threads at once).
void* scratchpad(std::size_t bytes);

/// Caps the instruction sets oneDNN may use to Kestrel's level: baseline -> SSE4.1, avx2 -> AVX2,
/// avx512 -> AVX-512 with BF16. Takes effect only before oneDNN builds its first kernel, so
/// engine() calls it with cpu_capability(); returns false when it was too late.
bool cap_isa(CpuCapability level);

/// The instruction set oneDNN's kernels use, as oneDNN names it ("avx2", "avx512_core_bf16", ...).
const char* effective_isa();

/// While it lives, oneDNN calls on this thread (building primitives and running them) use this
/// thread alone: sets the thread's OpenMP thread count to 1 and restores it after. Primitives
/// read the count when they are built, so build and run them under one of these.
class OnCallingThread {
 public:
  OnCallingThread();
  ~OnCallingThread();
  OnCallingThread(const OnCallingThread&) = delete;
  OnCallingThread& operator=(const OnCallingThread&) = delete;

 private:
  int previous_;
};

}  // namespace kestrel::kernels::onednn
