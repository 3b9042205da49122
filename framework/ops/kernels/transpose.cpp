#include "framework/ops/kernels/transpose.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "framework/core/thread_pool.h"

namespace kestrel::kernels {
namespace {

// 32x32 tiles of up to 8-byte elements: source and destination tiles (16 KiB) sit in L1 together.
// Measured on 2048x2048 float32, one thread: 32 beats 16 by about 2x and matches 64.
constexpr std::int64_t kTile = 32;

// The permutation on a smaller equivalent problem: size-1 axes dropped, and input axes that
// stay neighbours in the output merged into one.
struct Plan {
  std::vector<std::int64_t> in_dims;  // reduced input dims
  std::vector<int> perm;              // reduced permutation: output axis k reads input axis perm[k]
};

Plan make_plan(const Shape& in, const std::vector<int>& perm) {
  const int rank = in.rank();
  // Keep only the axes longer than 1, renumbered in input order.
  std::vector<int> renumber(static_cast<std::size_t>(rank), -1);
  std::vector<std::int64_t> kept_dims;
  for (int d = 0; d < rank; ++d) {
    if (in[d] > 1) {
      renumber[static_cast<std::size_t>(d)] = static_cast<int>(kept_dims.size());
      kept_dims.push_back(in[d]);
    }
  }
  std::vector<int> kept_perm;
  for (int p : perm) {
    if (renumber[static_cast<std::size_t>(p)] >= 0) kept_perm.push_back(renumber[static_cast<std::size_t>(p)]);
  }
  // Group runs of output axes that read consecutive input axes.
  std::vector<std::vector<int>> groups;  // in output order; each a run of input axes
  for (int p : kept_perm) {
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  // Order the groups by their first input axis to number the merged input axes.
  std::vector<int> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return groups[static_cast<std::size_t>(a)].front() < groups[static_cast<std::size_t>(b)].front();
  });
  Plan plan;
  plan.perm.assign(groups.size(), 0);
  for (std::size_t merged = 0; merged < order.size(); ++merged) {
    const std::vector<int>& group = groups[static_cast<std::size_t>(order[merged])];
    std::int64_t dim = 1;
    for (int axis : group) dim *= kept_dims[static_cast<std::size_t>(axis)];
    plan.in_dims.push_back(dim);
    plan.perm[static_cast<std::size_t>(order[merged])] = static_cast<int>(merged);
  }
  return plan;
}

// Walks a multi-index over `dims`, keeping the matching offset in a tensor with `strides`.
struct Odometer {
  const std::vector<std::int64_t>& dims;
  const std::vector<std::int64_t>& strides;
  std::vector<std::int64_t> index;
  std::int64_t offset = 0;

  Odometer(const std::vector<std::int64_t>& d, const std::vector<std::int64_t>& s, std::int64_t flat)
      : dims(d), strides(s), index(d.size(), 0) {
    for (std::size_t k = dims.size(); k-- > 0;) {
      index[k] = flat % dims[k];
      flat /= dims[k];
      offset += index[k] * strides[k];
    }
  }
  void next() {
    for (std::size_t k = dims.size(); k-- > 0;) {
      offset += strides[k];
      if (++index[k] < dims[k]) return;
      offset -= index[k] * strides[k];
      index[k] = 0;
    }
  }
};

constexpr std::int64_t kMicro = 8;

// One 8x8 block through a local buffer: whole-row loads and stores the compiler can vectorize.
template <class T>
inline void micro_tile(const T* src, std::int64_t src_step, T* dst, std::int64_t dst_step) {
  T block[kMicro][kMicro];
  for (std::int64_t j = 0; j < kMicro; ++j) {
    for (std::int64_t i = 0; i < kMicro; ++i) block[i][j] = src[j * src_step + i];
  }
  for (std::int64_t i = 0; i < kMicro; ++i) {
    for (std::int64_t j = 0; j < kMicro; ++j) dst[i * dst_step + j] = block[i][j];
  }
}

#if defined(__AVX__)
// 4-byte elements (float32, int32): the 8x8 block transposed in eight AVX registers.
template <>
inline void micro_tile<std::uint32_t>(const std::uint32_t* src, std::int64_t src_step, std::uint32_t* dst,
                                      std::int64_t dst_step) {
  auto load = [&](std::int64_t j) { return _mm256_loadu_ps(reinterpret_cast<const float*>(src + j * src_step)); };
  __m256 r0 = load(0), r1 = load(1), r2 = load(2), r3 = load(3), r4 = load(4), r5 = load(5), r6 = load(6), r7 = load(7);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
         u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
         u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
         u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
         u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  auto store = [&](std::int64_t i, __m256 v) { _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * dst_step), v); };
  store(0, _mm256_permute2f128_ps(u0, u4, 0x20));
  store(1, _mm256_permute2f128_ps(u1, u5, 0x20));
  store(2, _mm256_permute2f128_ps(u2, u6, 0x20));
  store(3, _mm256_permute2f128_ps(u3, u7, 0x20));
  store(4, _mm256_permute2f128_ps(u0, u4, 0x31));
  store(5, _mm256_permute2f128_ps(u1, u5, 0x31));
  store(6, _mm256_permute2f128_ps(u2, u6, 0x31));
  store(7, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif

template <class T>
void transpose_kernel(const T* src, T* dst, const Plan& plan) {
  const int rank = static_cast<int>(plan.in_dims.size());
  std::int64_t numel = 1;
  for (std::int64_t d : plan.in_dims) numel *= d;
  if (rank <= 1) {
    std::memcpy(dst, src, static_cast<std::size_t>(numel) * sizeof(T));
    return;
  }
  std::vector<std::int64_t> in_strides(static_cast<std::size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    in_strides[static_cast<std::size_t>(d)] =
        in_strides[static_cast<std::size_t>(d + 1)] * plan.in_dims[static_cast<std::size_t>(d + 1)];
  }
  // Per output axis: its size, and the step it takes in the source.
  std::vector<std::int64_t> out_dims(static_cast<std::size_t>(rank));
  std::vector<std::int64_t> src_steps(static_cast<std::size_t>(rank));
  for (int k = 0; k < rank; ++k) {
    auto p = static_cast<std::size_t>(plan.perm[static_cast<std::size_t>(k)]);
    out_dims[static_cast<std::size_t>(k)] = plan.in_dims[p];
    src_steps[static_cast<std::size_t>(k)] = in_strides[p];
  }

  if (plan.perm.back() == rank - 1) {
    // Contiguous rows of the last axis: copy each with one memcpy.
    const std::int64_t run = out_dims.back();
    std::vector<std::int64_t> outer_dims(out_dims.begin(), out_dims.end() - 1);
    std::vector<std::int64_t> outer_steps(src_steps.begin(), src_steps.end() - 1);
    std::int64_t grain = std::max<std::int64_t>(1, kCopyGrainBytes / static_cast<std::int64_t>(run * sizeof(T)));
    parallel_for(numel / run, grain, [&](std::int64_t begin, std::int64_t end) {
      Odometer odo(outer_dims, outer_steps, begin);
      for (std::int64_t row = begin; row < end; ++row, odo.next()) {
        std::memcpy(dst + row * run, src + odo.offset, static_cast<std::size_t>(run) * sizeof(T));
      }
    });
    return;
  }

  // A batch of 2-D transposes: i runs over output axis q (the source's contiguous last axis),
  // j over the output's last axis (strided in the source). Every other axis is batch.
  std::vector<std::int64_t> out_strides(static_cast<std::size_t>(rank), 1);
  for (int k = rank - 2; k >= 0; --k) {
    out_strides[static_cast<std::size_t>(k)] =
        out_strides[static_cast<std::size_t>(k + 1)] * out_dims[static_cast<std::size_t>(k + 1)];
  }
  const int q = static_cast<int>(std::find(plan.perm.begin(), plan.perm.end(), rank - 1) - plan.perm.begin());
  const std::int64_t n_i = out_dims[static_cast<std::size_t>(q)];
  const std::int64_t dst_step_i = out_strides[static_cast<std::size_t>(q)];
  const std::int64_t n_j = out_dims.back();
  const std::int64_t src_step_j = src_steps.back();
  std::vector<std::int64_t> batch_dims, batch_src, batch_dst;
  for (int k = 0; k < rank - 1; ++k) {
    if (k == q) continue;
    batch_dims.push_back(out_dims[static_cast<std::size_t>(k)]);
    batch_src.push_back(src_steps[static_cast<std::size_t>(k)]);
    batch_dst.push_back(out_strides[static_cast<std::size_t>(k)]);
  }
  std::int64_t batches = 1;
  for (std::int64_t d : batch_dims) batches *= d;
  const std::int64_t i_tiles = (n_i + kTile - 1) / kTile;
  const std::int64_t task_bytes = std::min(n_i, kTile) * n_j * static_cast<std::int64_t>(sizeof(T));
  std::int64_t grain = std::max<std::int64_t>(1, kCopyGrainBytes / task_bytes);

  parallel_for(batches * i_tiles, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      std::int64_t batch = task / i_tiles;
      std::int64_t i0 = (task % i_tiles) * kTile;
      std::int64_t i1 = std::min(i0 + kTile, n_i);
      Odometer src_at(batch_dims, batch_src, batch);
      Odometer dst_at(batch_dims, batch_dst, batch);
      const T* s = src + src_at.offset;
      T* d = dst + dst_at.offset;
      for (std::int64_t j0 = 0; j0 < n_j; j0 += kTile) {
        std::int64_t j1 = std::min(j0 + kTile, n_j);
        for (std::int64_t ib = i0; ib < i1; ib += kMicro) {
          for (std::int64_t jb = j0; jb < j1; jb += kMicro) {
            if (ib + kMicro <= i1 && jb + kMicro <= j1) {
              micro_tile(s + jb * src_step_j + ib, src_step_j, d + ib * dst_step_i + jb, dst_step_i);
              continue;
            }
            for (std::int64_t i = ib; i < std::min(ib + kMicro, i1); ++i) {
              for (std::int64_t j = jb; j < std::min(jb + kMicro, j1); ++j)
                d[i * dst_step_i + j] = s[j * src_step_j + i];
            }
          }
        }
      }
    }
  });
}

}  // namespace

void transpose(const TensorView& in, const TensorView& out, std::span<const int> perm) {
  if (out.numel() == 0) return;
  const Plan plan = make_plan(in.shape, std::vector<int>(perm.begin(), perm.end()));
  // Elements are moved, never interpreted: dispatch on their size, not their dtype.
  switch (size_of(out.dtype)) {
    case 1: transpose_kernel(in.as<std::uint8_t>(), out.as<std::uint8_t>(), plan); break;
    case 2: transpose_kernel(in.as<std::uint16_t>(), out.as<std::uint16_t>(), plan); break;
    case 4: transpose_kernel(in.as<std::uint32_t>(), out.as<std::uint32_t>(), plan); break;
    default: transpose_kernel(in.as<std::uint64_t>(), out.as<std::uint64_t>(), plan); break;
  }
}

}  // namespace kestrel::kernels
