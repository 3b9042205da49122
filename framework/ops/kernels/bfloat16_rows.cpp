#include "framework/ops/kernels/bfloat16_rows.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/cpu_kernels.h"

namespace kestrel::kernels {
namespace {

// Elements per parallel_for share, at least.
constexpr std::int64_t kGrainElements = 1 << 14;
// Elements widened at a time when rows are short: whole rows, about 16 KiB of float32 per operand,
// so that the float32 kernel runs on many rows per call rather than paying a call per row.
constexpr std::int64_t kBlockElements = 1 << 12;
// layer norm's gamma gradient sums its rows in at most this many groups, each into a partial of
// d floats, and adds those in order.
constexpr std::int64_t kMaxGroups = 64;

// Buffers of the calling thread: the runs of up to three operands, then gamma and beta (or a
// cross-entropy's dloss), then the partial sums of a gamma gradient.
enum class Slot : std::size_t { run0, run1, run2, gamma, beta, partials, count };

thread_local std::array<AlignedBuffer<float>, static_cast<std::size_t>(Slot::count)> t_buffers;

// The calling thread's float32 buffer `slot` (one per operand in use at once), 64-byte aligned,
// with room for `count` floats.
float* thread_floats(Slot slot, std::int64_t count) {
  return t_buffers[static_cast<std::size_t>(slot)].get(static_cast<std::size_t>(count));
}

// Elements [offset, offset + count) of t as float32: in place when t is float32, else staged in
// buffer `slot` (aligned_buffer.h's staged_run), widened when `load`.
float* run_of(const TensorView& t, std::int64_t offset, std::int64_t count, Slot slot, bool load) {
  if (t.dtype == DType::float32) return t.as<float>() + offset;
  float* run = staged_run(t_buffers[static_cast<std::size_t>(slot)], offset, count);
  if (load) cpu().widen_bfloat16(t.as<bfloat16>() + offset, count, run);
  return run;
}

// Rounds a run computed by run_of(t, ..., load = false) into t, when t is bfloat16.
void store(const float* run, const TensorView& t, std::int64_t offset, std::int64_t count) {
  if (t.dtype == DType::bfloat16) cpu().round_to_bfloat16(run, count, t.as<bfloat16>() + offset);
}

// A [d] parameter (or a cross-entropy's dloss, one per row) as float32: itself, or widened into
// the calling thread's buffer `slot`, which the worker threads only read (a compiled step
// allocates nothing for it).
const float* parameter(const TensorView& p, Slot slot) {
  if (p.dtype == DType::float32) return p.as<float>();
  float* wide = thread_floats(slot, p.numel());
  cpu().widen_bfloat16(p.as<bfloat16>(), p.numel(), wide);
  return wide;
}

// Calls fn(row) for each of `rows` runs of `size` elements over the pool.
template <class Fn>
void for_each_run(std::int64_t rows, std::int64_t size, const Fn& fn) {
  parallel_for(rows, std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(size, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) fn(r);
               });
}

// Rows of d elements widened at a time: about kBlockElements, one when rows are longer.
std::int64_t rows_per_block(std::int64_t d) {
  return std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(d, 1));
}

// Calls fn(first, count) over `rows` contiguous rows of d elements, in blocks of rows_per_block(d)
// rows, over the pool.
template <class Fn>
void for_each_row_block(std::int64_t rows, std::int64_t d, const Fn& fn) {
  const std::int64_t per_block = rows_per_block(d);
  const std::int64_t blocks = (rows + per_block - 1) / per_block;
  for_each_run(blocks, per_block * d, [&](std::int64_t b) {
    const std::int64_t first = b * per_block;
    fn(first, std::min(per_block, rows - first));
  });
}

// Rows [first, first + count) of a labels tensor, as a flat view.
TensorView label_rows(const TensorView& labels, std::int64_t first, std::int64_t count) {
  return TensorView{static_cast<std::byte*>(labels.data) + first * static_cast<std::int64_t>(size_of(labels.dtype)),
                    Shape{count}, labels.dtype};
}

}  // namespace

void layer_norm_bfloat16(const TensorView& x, const TensorView& gamma, const TensorView& beta, const TensorView& y,
                         float epsilon) {
  if (x.numel() == 0) return;
  cpu().layer_norm(x, parameter(gamma, Slot::gamma), parameter(beta, Slot::beta), y, epsilon);
}

void layer_norm_backprop_bfloat16(const TensorView& x, const TensorView& gamma, const TensorView& dy,
                                  const TensorView& dx, float epsilon) {
  if (x.numel() == 0) return;
  cpu().layer_norm_backprop(x, parameter(gamma, Slot::gamma), dy, dx, epsilon);
}

void sparse_softmax_cross_entropy_bfloat16(const TensorView& logits, const TensorView& labels, const TensorView& loss,
                                           std::int64_t ignore_index) {
  const std::int64_t classes = logits.shape[-1], rows = labels.numel();
  for_each_row_block(rows, classes, [&](std::int64_t first, std::int64_t count) {
    const float* in = run_of(logits, first * classes, count * classes, Slot::run0, true);
    cpu().sparse_softmax_cross_entropy(in, label_rows(labels, first, count), loss.as<float>() + first, classes,
                                       ignore_index);
  });
}

void sparse_softmax_cross_entropy_backprop_bfloat16(const TensorView& logits, const TensorView& labels,
                                                    const TensorView& dloss, const TensorView& dlogits,
                                                    std::int64_t ignore_index) {
  const std::int64_t classes = logits.shape[-1], rows = labels.numel();
  const float* row_scales = parameter(dloss, Slot::gamma);
  for_each_row_block(rows, classes, [&](std::int64_t first, std::int64_t count) {
    const float* in = run_of(logits, first * classes, count * classes, Slot::run0, true);
    float* out = run_of(dlogits, first * classes, count * classes, Slot::run1, false);
    cpu().sparse_softmax_cross_entropy_backprop(in, label_rows(labels, first, count), row_scales + first, out, classes,
                                                ignore_index);
    store(out, dlogits, first * classes, count * classes);
  });
}

void layer_norm_gamma_backprop(const TensorView& x, const TensorView& dy, const TensorView& dgamma, float epsilon) {
  const std::int64_t d = x.shape[-1], rows = d == 0 ? 0 : x.numel() / d;
  // At most kMaxGroups groups of rows, so the partial sums stay small however many rows there are.
  const std::int64_t per_group = (rows + kMaxGroups - 1) / kMaxGroups;
  const std::int64_t groups = (rows + per_group - 1) / std::max<std::int64_t>(per_group, 1);
  float* const partials = thread_floats(Slot::partials, std::max<std::int64_t>(groups, 1) * d);
  for_each_run(groups, per_group * d, [&](std::int64_t group) {
    float* partial = partials + group * d;
    std::fill(partial, partial + d, 0.0f);
    const std::int64_t first = group * per_group;
    cpu().layer_norm_gamma_partial(x, dy, partial, first, std::min(rows, first + per_group) - first, epsilon);
  });
  // The groups' partial sums, added in group order.
  float* sum = run_of(dgamma, 0, d, Slot::run2, false);
  std::fill(sum, sum + d, 0.0f);
  for (std::int64_t group = 0; group < groups; ++group) {
    for (std::int64_t j = 0; j < d; ++j) sum[j] += partials[group * d + j];
  }
  store(sum, dgamma, 0, d);
}

}  // namespace kestrel::kernels
