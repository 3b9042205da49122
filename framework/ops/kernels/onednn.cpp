#include "framework/ops/kernels/onednn.h"

#include <omp.h>

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/kernels/aligned_buffer.h"

namespace kestrel::kernels::onednn {
namespace {

dnnl::cpu_isa to_dnnl(CpuCapability level) {
  switch (level) {
    case CpuCapability::baseline: return dnnl::cpu_isa::sse41;
    case CpuCapability::avx2: return dnnl::cpu_isa::avx2;
    case CpuCapability::avx512: break;
  }
  // Kestrel's top level: AVX-512 with the bfloat16 instructions, and not AMX, which has no
  // float32 kernels and which Kestrel's own kernels do not use either.
  return dnnl::cpu_isa::avx512_core_bf16;
}

}  // namespace

bool cap_isa(CpuCapability level) { return dnnl::set_max_cpu_isa(to_dnnl(level)) == dnnl::status::success; }

const char* effective_isa() {
  engine();  // the cap comes first
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

bool computes_bf16() { return cpu_capability() == CpuCapability::avx512; }

dnnl_engine* engine() {
  static const dnnl::engine instance = [] {
    // The one place oneDNN learns Kestrel's level (KESTREL_CPU_CAPABILITY pins it), before the
    // engine and any primitive: oneDNN fixes its ISA when it first dispatches a kernel. A cap that
    // comes too late (the application used oneDNN first) leaves oneDNN at its own level.
    cap_isa(cpu_capability());
    // Kestrel keeps its own primitive cache (primitive_cache.h). oneDNN's global one would only
    // duplicate it, and it hands one thread's primitive to another through synchronization
    // ThreadSanitizer cannot see inside libdnnl, so the strategies' TSan run would report races.
    dnnl::set_primitive_cache_capacity(0);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return instance.get();
}

dnnl_stream* stream() {
  thread_local const dnnl::stream instance(dnnl::engine(engine(), /*weak=*/true));
  return instance.get();
}

void execute(dnnl_primitive* primitive, std::span<const Argument> arguments) {
  constexpr std::size_t kMaxArguments = 8;
  KESTREL_DCHECK(arguments.size() <= kMaxArguments);
  dnnl_exec_arg_t args[kMaxArguments];
  int count = 0;
  dnnl_status_t status = dnnl_success;
  for (const Argument& a : arguments) {
    dnnl_memory_t memory = nullptr;
    status = dnnl_memory_create(&memory, static_cast<const dnnl_memory_desc_t*>(a.desc), engine(),
                                const_cast<void*>(a.data));
    if (status != dnnl_success) break;
    args[count++] = {a.index, memory};
  }
  if (status == dnnl_success) status = dnnl_primitive_execute(primitive, stream(), count, args);
  for (int i = 0; i < count; ++i) dnnl_memory_destroy(args[i].memory);
  if (status != dnnl_success) {
    throw Error(op_message("onednn", "running a primitive failed with oneDNN status " +
                                         std::to_string(static_cast<int>(status)) +
                                         "; a Kestrel bug: report it with this message (DNNL_VERBOSE=1 shows more)"));
  }
}

void* scratchpad(std::size_t bytes) {
  thread_local AlignedBuffer<std::byte> buffer;
  return buffer.get(bytes);
}

OnCallingThread::OnCallingThread() : previous_(omp_get_max_threads()) {
  if (previous_ != 1) omp_set_num_threads(1);
}

OnCallingThread::~OnCallingThread() {
  if (previous_ != 1) omp_set_num_threads(previous_);
}

}  // namespace kestrel::kernels::onednn
