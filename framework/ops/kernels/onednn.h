// oneDNN, the library matmul and convolution run on: its engine, a stream per thread, a scratchpad
// per thread, its instruction-set cap, and the rule that keeps it on Kestrel's threads.
//
//   onednn::OnCallingThread one_thread;   // around every oneDNN call, primitive creation included
//   dnnl::matmul::primitive_desc pd(desc, attr, dnnl::engine(onednn::engine(), /*weak=*/true));
//   onednn::execute(primitive.get(), {{DNNL_ARG_SRC, &src_desc.data, a}, ...,
//                                     {DNNL_ARG_SCRATCHPAD, &scratch_desc.data,
//                                      onednn::scratchpad(scratch_desc.get_size())}});
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
#include <initializer_list>
#include <span>

#include "framework/core/cpu_capability.h"

struct dnnl_engine;
struct dnnl_stream;
struct dnnl_primitive;

namespace kestrel::kernels::onednn {

/// The process-wide CPU engine; the first call caps oneDNN's instruction sets (cap_isa).
dnnl_engine* engine();

/// The calling thread's stream on engine() (a oneDNN stream is not shared between threads).
dnnl_stream* stream();

/// One argument of a primitive run: oneDNN's index (DNNL_ARG_SRC, ...), the memory descriptor the
/// primitive was built with (a dnnl_memory_desc_t: `&desc.data` of a dnnl::memory::desc), and the
/// data, which oneDNN takes through a non-const pointer even when it only reads it.
struct Argument {
  int index;
  const void* desc;
  const void* data;
};

/// Runs `primitive` on the calling thread's stream. Through oneDNN's C API, so that a run
/// allocates no more than oneDNN needs (the C++ wrapper's shared handles and argument map cost
/// about a microsecond a call, which many small products per step add up).
void execute(dnnl_primitive* primitive, std::span<const Argument> arguments);
inline void execute(dnnl_primitive* primitive, std::initializer_list<Argument> arguments) {
  execute(primitive, std::span(arguments.begin(), arguments.size()));
}

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

/// Whether oneDNN multiplies and convolves bfloat16 itself at cpu_capability()'s level: oneDNN
/// 2.6 does with AVX-512 (natively with AVX512_BF16, emulated without); below, it has only
/// reference kernels, far slower than widening blocks for its float32 ones (kernels/gemm.h).
bool computes_bf16();

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
