#include "strategies/all_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "strategies/workers.h"

namespace kestrel::distribute {
namespace {

constexpr const char* kOp = "all_reduce_sum";
// Elements per parallel chunk, at least: enough that waking a pool thread is worth it.
constexpr std::int64_t kChunkGrain = 1 << 14;
// Elements summed at a time within a chunk: the running sums (64 KiB of float) stay in L2 while
// each replica's slice streams past, so memory sees one read per input and one write per output.
// Each slice is a run of 16 pages, long enough for the hardware prefetchers, which stop at every
// 4 KiB page: blocks of one page summed GPT-tiny's gradients at 19 GB/s, these at 34 GB/s
// (replica_bench's all_reduce case, Zen 5).
constexpr std::int64_t kBlock = 1 << 14;

std::string where(std::size_t position, std::size_t replica) {
  return "position " + std::to_string(position) + " of replica " + std::to_string(replica);
}

// Throws unless every replica has a tensor of replica 0's spec at every position, or every
// replica has an undefined one there.
void check_replicas_agree(const std::vector<std::vector<Tensor>>& per_replica) {
  if (per_replica.empty()) {
    throw ValueError(op_message(kOp, "got no replicas; pass one tensor list per replica (at least one)"));
  }
  const std::vector<Tensor>& first = per_replica[0];
  for (std::size_t r = 1; r < per_replica.size(); ++r) {
    if (per_replica[r].size() != first.size()) {
      throw ValueError(op_message(kOp, "replica " + std::to_string(r) + " has " +
                                           std::to_string(per_replica[r].size()) + " tensors but replica 0 has " +
                                           std::to_string(first.size()) +
                                           "; every replica passes one tensor per position, in the same order"));
    }
  }
  for (std::size_t k = 0; k < first.size(); ++k) {
    const Tensor& reference = first[k];
    for (std::size_t r = 0; r < per_replica.size(); ++r) {
      const Tensor& t = per_replica[r][k];
      if (t.defined() != reference.defined()) {
        const std::size_t defined_in = t.defined() ? r : 0, undefined_in = t.defined() ? 0 : r;
        throw ValueError(op_message(
            kOp, "position " + std::to_string(k) + " is undefined in replica " + std::to_string(undefined_in) +
                     " but " + per_replica[defined_in][k].spec().to_string() + " in replica " +
                     std::to_string(defined_in) +
                     "; a position must be defined in every replica (a gradient reached the variable) or in none"));
      }
      if (!t.defined()) continue;
      if (t.is_symbolic()) {
        throw JitError(op_message(kOp, where(k, r) + " is a symbolic tensor made while jit_compile traces, and has no "
                                                     "data; all_reduce_sum sums tensors with values"));
      }
      if (t.dtype() != reference.dtype()) {
        throw TypeError(op_message(kOp, where(k, r) + " is " + t.spec().to_string() + " but replica 0's is " +
                                            reference.spec().to_string() +
                                            "; every replica's tensor at a position has the same dtype"));
      }
      if (t.shape() != reference.shape()) {
        throw ShapeError(op_message(kOp, where(k, r) + " is " + t.spec().to_string() + " but replica 0's is " +
                                             reference.spec().to_string() +
                                             "; every replica's tensor at a position has the same shape"));
      }
    }
    if (reference.defined() && reference.dtype() == DType::bool_) {
      throw TypeError(op_message(kOp, "position " + std::to_string(k) + " is " + reference.spec().to_string() +
                                          ", and bool has no sum; cast to int32 to count"));
    }
  }
}

template <class T>
const T* replica_data(const std::vector<std::vector<Tensor>>& per_replica, std::size_t replica, std::size_t k) {
  return static_cast<const T*>(per_replica[replica][k].raw_data());
}

// out[i] = (((in0[i] + in1[i]) + in2[i]) + ...) for i in [begin, end) of position k. T is float
// or an unsigned integer (so that overflow wraps instead of being undefined).
template <class T>
void sum_in_place(const std::vector<std::vector<Tensor>>& per_replica, std::size_t k, T* out, std::int64_t begin,
                  std::int64_t end) {
  for (std::int64_t block = begin; block < end; block += kBlock) {
    const std::int64_t block_end = std::min(end, block + kBlock);
    const T* in0 = replica_data<T>(per_replica, 0, k);
    for (std::int64_t i = block; i < block_end; ++i) out[i] = in0[i];
    for (std::size_t r = 1; r < per_replica.size(); ++r) {
      const T* in = replica_data<T>(per_replica, r, k);
      for (std::int64_t i = block; i < block_end; ++i) out[i] += in[i];
    }
  }
}

// As sum_in_place, but summing bfloat16 in float32 and rounding once at the end.
void sum_bfloat16(const std::vector<std::vector<Tensor>>& per_replica, std::size_t k, bfloat16* out, std::int64_t begin,
                  std::int64_t end) {
  float sums[kBlock];
  for (std::int64_t block = begin; block < end; block += kBlock) {
    const std::int64_t count = std::min(end, block + kBlock) - block;
    const bfloat16* in0 = replica_data<bfloat16>(per_replica, 0, k) + block;
    for (std::int64_t i = 0; i < count; ++i) sums[i] = static_cast<float>(in0[i]);
    for (std::size_t r = 1; r < per_replica.size(); ++r) {
      const bfloat16* in = replica_data<bfloat16>(per_replica, r, k) + block;
      for (std::int64_t i = 0; i < count; ++i) sums[i] += static_cast<float>(in[i]);
    }
    for (std::int64_t i = 0; i < count; ++i) out[block + i] = bfloat16(sums[i]);
  }
}

void sum_range(const std::vector<std::vector<Tensor>>& per_replica, std::size_t k, void* out, std::int64_t begin,
               std::int64_t end) {
  switch (per_replica[0][k].dtype()) {
    case DType::float32: return sum_in_place(per_replica, k, static_cast<float*>(out), begin, end);
    case DType::bfloat16: return sum_bfloat16(per_replica, k, static_cast<bfloat16*>(out), begin, end);
    case DType::int32: return sum_in_place(per_replica, k, static_cast<std::uint32_t*>(out), begin, end);
    case DType::int64: return sum_in_place(per_replica, k, static_cast<std::uint64_t*>(out), begin, end);
    case DType::bool_: break;  // rejected by check_replicas_agree
  }
}

// Sums the elements [begin, end) of every defined position laid end to end: position k's elements
// follow those of the defined positions before it. Finding where a chunk starts by walking the
// positions costs nothing next to summing them, and needs no table.
void sum_span(const std::vector<std::vector<Tensor>>& per_replica, const std::vector<Tensor>& sums, std::int64_t begin,
              std::int64_t end) {
  std::int64_t start = 0;  // where position k's elements begin
  for (std::size_t k = 0; k < sums.size() && start < end; ++k) {
    if (!sums[k].defined()) continue;
    const std::int64_t count = sums[k].numel();
    const std::int64_t from = std::max(begin, start) - start;
    const std::int64_t to = std::min(end, start + count) - start;
    if (from < to) sum_range(per_replica, k, sums[k].buffer()->data(), from, to);
    start += count;
  }
}

}  // namespace

std::vector<Tensor> all_reduce_sum(const std::vector<std::vector<Tensor>>& per_replica, std::vector<Tensor> reused) {
  check_replicas_agree(per_replica);
  const std::vector<Tensor>& first = per_replica[0];
  std::vector<Tensor> sums(first.size());
  reused.resize(first.size());
  std::int64_t total = 0;
  for (std::size_t k = 0; k < first.size(); ++k) {
    if (!first[k].defined()) continue;
    sums[k] = Tensor::empty_or_reused(std::move(reused[k]), first[k].shape(), first[k].dtype());
    total += first[k].numel();
  }
  // One parallel_for over all positions at once balances many small tensors and a few large ones
  // alike. Each element's sum runs in replica order whichever thread does it.
  parallel_for(total, kChunkGrain, [&per_replica, &sums](std::int64_t begin, std::int64_t end) {
    sum_span(per_replica, sums, begin, end);
  });
  return sums;
}

namespace {

// Packs the tensors of `sums` that `takes` accepts into one buffer of T, sums it over the workers
// and unpacks it: one message for all of them.
template <class T, class Takes, class Pack, class Unpack>
void sum_packed(const Workers& workers, std::vector<Tensor>& sums, Takes takes, Pack pack, Unpack unpack) {
  // Kept from call to call (per thread): a steady step's sums allocate nothing here.
  thread_local std::vector<T> packed;
  std::size_t total = 0;
  for (const Tensor& t : sums) total += t.defined() && takes(t.dtype()) ? static_cast<std::size_t>(t.numel()) : 0;
  if (total == 0) return;
  packed.resize(total);
  std::size_t at = 0;
  for (const Tensor& t : sums) {
    if (!t.defined() || !takes(t.dtype())) continue;
    pack(t, packed.data() + at);
    at += static_cast<std::size_t>(t.numel());
  }
  workers.sum(std::span<T>(packed.data(), total));
  at = 0;
  for (Tensor& t : sums) {
    if (!t.defined() || !takes(t.dtype())) continue;
    unpack(packed.data() + at, t);
    at += static_cast<std::size_t>(t.numel());
  }
}

template <class From, class To>
void convert(const From* from, To* to, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) to[i] = static_cast<To>(from[i]);
}

}  // namespace

void sum_over_workers(const Workers& workers, std::vector<Tensor>& sums) {
  if (workers.count() == 1) return;
  sum_packed<float>(
      workers, sums, [](DType d) { return d == DType::float32 || d == DType::bfloat16; },
      [](const Tensor& t, float* to) {
        if (t.dtype() == DType::float32) {
          std::memcpy(to, t.raw_data(), t.nbytes());
        } else {
          convert(static_cast<const bfloat16*>(t.raw_data()), to, t.numel());
        }
      },
      [](const float* from, Tensor& t) {
        if (t.dtype() == DType::float32) {
          std::memcpy(t.buffer()->data(), from, t.nbytes());
        } else {
          convert(from, static_cast<bfloat16*>(t.buffer()->data()), t.numel());
        }
      });
  sum_packed<std::int64_t>(
      workers, sums, [](DType d) { return d == DType::int32 || d == DType::int64; },
      [](const Tensor& t, std::int64_t* to) {
        if (t.dtype() == DType::int64) {
          std::memcpy(to, t.raw_data(), t.nbytes());
        } else {
          convert(static_cast<const std::int32_t*>(t.raw_data()), to, t.numel());
        }
      },
      [](const std::int64_t* from, Tensor& t) {
        if (t.dtype() == DType::int64) {
          std::memcpy(t.buffer()->data(), from, t.nbytes());
        } else {
          // The low 32 bits of the 64-bit sum: the int32 sum wrapped modulo 2^32.
          auto* to = static_cast<std::uint32_t*>(t.buffer()->data());
          for (std::int64_t i = 0; i < t.numel(); ++i) to[i] = static_cast<std::uint32_t>(from[i]);
        }
      });
}

}  // namespace kestrel::distribute
