#include "framework/ops/kernels/gemm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/core/cpu_capability.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/gemm_epilogue.h"
#include "framework/ops/kernels/gemm_widened.h"
#include "framework/ops/kernels/onednn.h"
#include "framework/ops/kernels/primitive_cache.h"
#include "framework/ops/kernels/transpose.h"

namespace kestrel::kernels {
namespace {

using Dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;

// Below this many multiply-adds per extra thread, waking a worker costs more than it saves.
constexpr std::int64_t kMinMacsPerTask = std::int64_t{1} << 21;
// Tiles start at multiples of 16 rows or columns: whole vectors and register blocks for the most
// part, and fine enough that two tiles of a 128-wide product get 64 each (with 48, 48 and 80 took
// a quarter longer than an even split).
constexpr std::int64_t kTileAlign = 16;
constexpr std::int64_t kMatmulKind = 1;  // PrimitiveKey's first field
// See packed_gemm_is_faster.
constexpr double kOneDnnNoCopyThreshold = 0.0038;
constexpr std::int64_t kMinPackedDepth = 256;
// See runs_faster_transposed.
constexpr std::int64_t kMinTransposedAspect = 4;
constexpr std::int64_t kMinTransposedDepth = 1024;
constexpr std::int64_t kMinTransposedMacs = std::int64_t{1} << 28;
// See runs_faster_in_depth_slices.
constexpr std::int64_t kMinSlicedDepth = 4096;
constexpr std::int64_t kDepthSlice = 1024;

// A oneDNN matmul built for one shape and layout; the pointers come with each call.
struct MatmulPrimitive {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c, bias, scratchpad;
  int residual_post_op = -1;  // the binary post-op that adds the residual (described as C), or -1
};

// True when `g` has an epilogue: a bias, a residual or an activation.
template <class T, class Out>
bool has_epilogue(const GemmArgsOf<T, Out>& g) {
  return g.bias != nullptr || g.residual != nullptr || g.activation != GemmActivation::none;
}

// Moves `g`'s C, and the residual laid out as it, `elements` on.
template <class T, class Out>
void advance_c(GemmArgsOf<T, Out>& g, std::int64_t elements) {
  g.c += elements;
  if (g.residual != nullptr) g.residual += elements;
}

dnnl::algorithm eltwise_algorithm(GemmActivation activation) {
  switch (activation) {
    case GemmActivation::relu: return dnnl::algorithm::eltwise_relu;
    case GemmActivation::gelu_erf: return dnnl::algorithm::eltwise_gelu_erf;
    case GemmActivation::gelu_tanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case GemmActivation::none: break;
  }
  throw Error("gemm: no oneDNN algorithm for activation " + std::to_string(static_cast<int>(activation)));
}

template <class T>
constexpr DataType data_type() {
  return std::is_same_v<T, float> ? DataType::f32 : DataType::bf16;
}

std::int64_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// One level of an operand's batch: how many matrices, and the elements between them (0: one
// matrix shared by all of them).
struct BatchLevel {
  std::int64_t count;
  std::int64_t stride;
};

// An operand's batch levels: none for one matrix, [batch], or [outer, batch]. Every operand of a
// product gets as many (oneDNN wants descriptors of one rank).
template <class T, class Out>
std::vector<BatchLevel> batch_levels(const GemmArgsOf<T, Out>& g, std::int64_t stride, std::int64_t outer_stride) {
  if (g.batch_outer > 1) return {{g.batch_outer, outer_stride}, {g.batch, stride}};
  if (g.batch > 1) return {{g.batch, stride}};
  return {};
}

// One operand's [levels..., rows, cols] descriptor. Row-major with leading dimension ld, or its
// transpose read in place (strides swapped): oneDNN reads every layout Kestrel passes without a
// copy. A level of stride 0 shares the matrix across it through a broadcast dim of 1.
dnnl::memory::desc operand(DataType type, const std::vector<BatchLevel>& levels, std::int64_t rows, std::int64_t cols,
                           std::int64_t ld, bool transposed) {
  Dims dims, strides;
  for (const BatchLevel& level : levels) {
    const bool shared = level.stride == 0;
    dims.push_back(shared ? 1 : level.count);
    strides.push_back(shared ? rows * cols : level.stride);
  }
  dims.push_back(rows);
  dims.push_back(cols);
  strides.push_back(transposed ? 1 : ld);
  strides.push_back(transposed ? ld : 1);
  return {dims, type, strides};
}

template <class T, class Out>
std::string describe(const GemmArgsOf<T, Out>& g) {
  return "m=" + std::to_string(g.m) + " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
         " lda=" + std::to_string(g.lda) + (g.transpose_a ? " (transposed)" : "") + " ldb=" + std::to_string(g.ldb) +
         (g.transpose_b ? " (transposed)" : "") + " ldc=" + std::to_string(g.ldc) +
         " batch=" + std::to_string(g.batch) +
         (g.batch_outer > 1 ? " batch_outer=" + std::to_string(g.batch_outer) : "");
}

template <class T, class Out>
MatmulPrimitive build(const GemmArgsOf<T, Out>& g) {
  KESTREL_DCHECK((g.batch == 1 || g.stride_c != 0) && (g.batch_outer == 1 || g.outer_stride_c != 0));
  KESTREL_DCHECK(!has_epilogue(g) || (g.alpha == 1.0f && g.beta == 0.0f));
  MatmulPrimitive p;
  p.a = operand(data_type<T>(), batch_levels(g, g.stride_a, g.outer_stride_a), g.m, g.k, g.lda, g.transpose_a);
  p.b = operand(data_type<T>(), batch_levels(g, g.stride_b, g.outer_stride_b), g.k, g.n, g.ldb, g.transpose_b);
  p.c = operand(data_type<Out>(), batch_levels(g, g.stride_c, g.outer_stride_c), g.m, g.n, g.ldc, false);
  // One row of n, broadcast over C's rows (and its batch): oneDNN adds it as it stores C.
  if (g.bias != nullptr) p.bias = operand(data_type<Out>(), batch_levels(g, 0, 0), 1, g.n, g.n, false);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  dnnl::post_ops ops;
  // C = alpha A B + beta C: oneDNN's sum post-op adds the old C, scaled, as it stores.
  if (g.beta != 0.0f) ops.append_sum(g.beta);
  // The residual, in C's layout, added to the biased float32 sum as each element is stored.
  if (g.residual != nullptr) {
    p.residual_post_op = ops.len();
    ops.append_binary(dnnl::algorithm::binary_add, p.c);
  }
  if (g.activation != GemmActivation::none) ops.append_eltwise(1.0f, eltwise_algorithm(g.activation), 0.0f, 0.0f);
  attr.set_post_ops(ops);
  try {
    const dnnl::engine engine(onednn::engine(), /*weak=*/true);
    dnnl::matmul::primitive_desc pd(
        g.bias != nullptr ? dnnl::matmul::desc(p.a, p.b, p.bias, p.c) : dnnl::matmul::desc(p.a, p.b, p.c), attr,
        engine);
    p.scratchpad = pd.scratchpad_desc();
    p.primitive = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    throw Error(op_message("gemm", "oneDNN cannot build a matmul for " + describe(g) + ": " + e.what() +
                                       "; a Kestrel bug: report it with this message (DNNL_VERBOSE=1 shows "
                                       "oneDNN's reasons)"));
  }
  return p;
}

// Everything the primitive depends on: dims, strides (both batch levels), transposes, alpha and
// beta (built in), the activation, the element types and whether a bias and a residual are added.
template <class T, class Out>
PrimitiveKey key_of(const GemmArgsOf<T, Out>& g) {
  return {kMatmulKind,
          g.m,
          g.n,
          g.k,
          g.lda,
          g.ldb,
          g.ldc,
          g.transpose_a,
          g.transpose_b,
          float_bits(g.alpha),
          float_bits(g.beta),
          g.batch,
          g.batch == 1 ? 0 : g.stride_a,
          g.batch == 1 ? 0 : g.stride_b,
          g.batch == 1 ? 0 : g.stride_c,
          g.batch_outer,
          g.batch_outer == 1 ? 0 : g.outer_stride_a,
          g.batch_outer == 1 ? 0 : g.outer_stride_b,
          g.batch_outer == 1 ? 0 : g.outer_stride_c,
          static_cast<std::int64_t>(g.activation) << 20 | static_cast<std::int64_t>(g.residual != nullptr) << 17 |
              static_cast<std::int64_t>(g.bias != nullptr) << 16 | static_cast<std::int64_t>(data_type<T>()) << 8 |
              static_cast<std::int64_t>(data_type<Out>())};
}

// `g` with the leading dimensions left 0 set to the dense ones.
template <class T, class Out>
GemmArgsOf<T, Out> with_leading_dims(GemmArgsOf<T, Out> g) {
  if (g.lda == 0) g.lda = g.transpose_a ? g.m : g.k;
  if (g.ldb == 0) g.ldb = g.transpose_b ? g.k : g.n;
  if (g.ldc == 0) g.ldc = g.n;
  KESTREL_DCHECK(g.lda >= (g.transpose_a ? g.m : g.k) && g.ldb >= (g.transpose_b ? g.k : g.n) && g.ldc >= g.n);
  return g;
}

// C = beta * C, for the products with nothing to multiply (k = 0 or alpha = 0), which oneDNN
// would skip without writing C.
template <class T, class Out>
void scale_c(const GemmArgsOf<T, Out>& g) {
  for (std::int64_t p = 0; p < g.batch; ++p) {
    for (std::int64_t i = 0; i < g.m; ++i) {
      Out* row = g.c + p * g.stride_c + i * g.ldc;
      if (g.beta == 0.0f) {
        std::fill(row, row + g.n, Out(0.0f));
      } else if (g.beta != 1.0f) {
        for (std::int64_t j = 0; j < g.n; ++j) row[j] = Out(g.beta * static_cast<float>(row[j]));
      }
    }
  }
}

// The epilogue (bias, residual, then activation) on every row of C, for the kernels that take none
// themselves (Eigen's packed kernel, and products with nothing to multiply): each on its own
// tile of C, still in cache, on a row widened to float32.
template <class T, class Out>
void finish_rows(const GemmArgsOf<T, Out>& g) {
  if (!has_epilogue(g)) return;
  for (std::int64_t p = 0; p < g.batch; ++p) {
    Out* const c = g.c + p * g.stride_c;
    EpilogueAddends<Out> addends{.bias = g.bias, .residual = g.residual, .residual_ld = g.ldc};
    if (g.residual != nullptr) addends.residual += p * g.stride_c;
    if constexpr (std::is_same_v<Out, float>) {
      apply_epilogue(c, g.m, g.n, g.ldc, addends, g.activation);
    } else {
      thread_local AlignedBuffer<float> row_buffer;  // grows to the widest row seen, then stays
      float* const widened = row_buffer.get(static_cast<std::size_t>(g.n));
      for (std::int64_t i = 0; i < g.m; ++i) {
        Out* row = c + i * g.ldc;
        for (std::int64_t j = 0; j < g.n; ++j) widened[j] = static_cast<float>(row[j]);
        EpilogueAddends<Out> row_addends = addends;
        if (addends.residual != nullptr) row_addends.residual += i * g.ldc;
        apply_epilogue(widened, 1, g.n, g.n, row_addends, g.activation);
        for (std::int64_t j = 0; j < g.n; ++j) row[j] = Out(widened[j]);
      }
    }
  }
}

// A float32 C takes GELU from ops::gelu's own kernel once oneDNN has stored the biased product, so
// the fused numbers are the unfused ops' bit for bit, on every path. It is also faster where it
// matters most: oneDNN 2.6's GELU post-ops are slow on BERT-tiny's depth of 128. kernels_bench,
// bias + GELU over the plain product, 2 threads, AMD EPYC Zen 4 (avx512f avx512_bf16), oneDNN's
// post-op against this: m=4096 k=128 n=512 1.28x against 1.13x (tanh GELU 1.26x against 1.18x),
// m=4096 k=128 n=128 1.28x against 1.15x; at k=256 (m=2048 n=768) it loses a little, 1.05x
// against 1.07x. oneDNN keeps the bias and ReLU, which cost it nothing in registers, and a
// bfloat16 C's GELU, which must come before its one rounding. (The jit moves GELU into the
// products of predict and evaluate programs; a training step keeps GELU's input for its
// gradient, so there GELU stays an op of its own.)
template <class T, class Out>
bool gelu_follows_the_product(const GemmArgsOf<T, Out>& g) {
  return std::is_same_v<Out, float> &&
         (g.activation == GemmActivation::gelu_erf || g.activation == GemmActivation::gelu_tanh);
}

// Below AVX-512, oneDNN 2.6 runs a float32 matmul on its sgemm, which skips packing when C has a
// short side (1/m + 1/n >= 0.0038: a side under ~260 when the other is long). Its no-copy kernels
// then read A and B in place, and past k = 256 they stream them from memory: at about half the
// speed of Eigen's packed kernel, worse on a transposed A with power-of-two rows, whose rows all
// fall in the same cache sets. Those products, a training step's weight gradients among them,
// stay on Eigen's packed kernel (kernels/cpu/packed_gemm.cpp); with AVX-512 oneDNN packs (brgemm).
// Zen 3, 1 thread, ms, Eigen vs oneDNN (no-copy):
//   A^T B m=8192 n=256 k=2048 (GPT-tiny's tied embedding gradient)   170-200 vs 377-385
//   A^T B m=1024 n=256 k=2048 (its FFN weight gradient)              18-20 vs 44-47
//   A B   m=2048 n=256 k=256 (its attention output projection)        3.2 vs 3.8-4.0
//   A B   m=n=k=512 (kernels_bench)                                    3.0-3.4 vs 4.6-5.2
// and with a short k the no-copy kernels win: m=4096 n=128 k=128 1.65 vs 1.44 (kernels_bench);
// attention, 64 x [128,64] x [64,128], 2.4 vs 1.95. When oneDNN packs (m = n = 1024, 2048; GPT-tiny's
// QKV m=2048 n=768 k=256) it matches or beats Eigen.
bool packed_gemm_is_faster(const GemmArgs& g) {
  return cpu_capability() != CpuCapability::avx512 && g.k >= kMinPackedDepth &&
         1.0 / static_cast<double>(g.m) + 1.0 / static_cast<double>(g.n) >= kOneDnnNoCopyThreshold;
}

// Group `o` of g's outer batch, as a product of one level.
template <class T, class Out>
GemmArgsOf<T, Out> outer_group(const GemmArgsOf<T, Out>& g, std::int64_t o) {
  GemmArgsOf<T, Out> group = g;
  group.batch_outer = 1;
  group.a += o * g.outer_stride_a;
  group.b += o * g.outer_stride_b;
  advance_c(group, o * g.outer_stride_c);
  return group;
}

// `run` on each group of g's outer batch: for the kernels that take one level of batch.
template <class T, class Out, class Run>
void for_each_group(const GemmArgsOf<T, Out>& g, Run run) {
  for (std::int64_t o = 0; o < g.batch_outer; ++o) run(outer_group(g, o));
}

// `run` on every matrix of g, one at a time.
template <class T, class Out, class Run>
void for_each_matrix(const GemmArgsOf<T, Out>& g, Run run) {
  for (std::int64_t o = 0; o < g.batch_outer; ++o) {
    GemmArgsOf<T, Out> one = outer_group(g, o);
    one.batch = 1;
    for (std::int64_t p = 0; p < g.batch; ++p) {
      run(one);
      one.a += g.stride_a;
      one.b += g.stride_b;
      advance_c(one, g.stride_c);
    }
  }
}

// With AVX-512, oneDNN's product of a plain A and B (both row-major as read) slows down as the
// depth grows past a few thousand: GPT-tiny's LM-head input gradient, dlogits [2048, 8192] times
// the [8192, 256] embedding, ran at 294 GFLOP/s on 2 threads and 176 on 1 (m = 256, a replica's
// share), against 440-460 and 224 for the same product cut into depth slices of 1024, each added
// into C (AMD EPYC Zen 5, avx512_bf16). Shallower depths gain little or lose a little (m = 256
// n = 1024 k = 2048: 472 against 460), so only depths of kMinSlicedDepth and more are cut. Only a
// float32 C: a bfloat16 one would be rounded once per slice. Products with an epilogue or a batch
// stay whole.
template <class T, class Out>
bool runs_faster_in_depth_slices(const GemmArgsOf<T, Out>& g) {
  return std::is_same_v<Out, float> && cpu_capability() == CpuCapability::avx512 && !g.transpose_a && !g.transpose_b &&
         g.k >= kMinSlicedDepth && g.batch == 1 && g.batch_outer == 1 && !has_epilogue(g);
}

template <class T, class Out>
void run_on_this_thread(const GemmArgsOf<T, Out>& g);

// `g` as depth slices of kDepthSlice, the first scaling C by beta, the others adding into it.
template <class T, class Out>
void run_in_depth_slices(const GemmArgsOf<T, Out>& g) {
  GemmArgsOf<T, Out> slice = g;
  for (std::int64_t begin = 0; begin < g.k; begin += kDepthSlice) {
    slice.k = std::min(kDepthSlice, g.k - begin);
    slice.a = g.a + begin;
    slice.b = g.b + begin * g.ldb;
    slice.beta = begin == 0 ? g.beta : 1.0f;
    run_on_this_thread(slice);
  }
}

// The whole of `g` (leading dims filled) on the calling thread: one oneDNN call, or Eigen's.
template <class T, class Out>
void run_on_this_thread(const GemmArgsOf<T, Out>& g) {
  if (g.k == 0 || g.alpha == 0.0f) {
    for_each_group(g, [](const GemmArgsOf<T, Out>& group) {
      scale_c(group);
      finish_rows(group);
    });
    return;
  }
  if (runs_faster_in_depth_slices(g)) {
    run_in_depth_slices(g);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (packed_gemm_is_faster(g)) {
      for_each_group(g, [](const GemmArgs& group) {
        cpu().packed_gemm(group);
        finish_rows(group);
      });
      return;
    }
  } else {
    if (!onednn::computes_bf16()) {  // oneDNN 2.6 has no bfloat16 matmul below AVX-512
      // The epilogue goes on each float32 tile before it is rounded.
      for_each_group(g, [](const GemmArgsOf<T, Out>& group) { widened_gemm_on_this_thread(group); });
      return;
    }
  }
  if ((g.batch > 1 && g.stride_a == 0 && g.stride_b == 0) ||
      (g.batch_outer > 1 && g.outer_stride_a == 0 && g.outer_stride_b == 0)) {
    // Both operands shared along a level: oneDNN broadcasts an operand against the other's batch,
    // not both against the output's, so each output matrix is its own product.
    for_each_matrix(g, [](const GemmArgsOf<T, Out>& one) { run_on_this_thread(one); });
    return;
  }
  if (gelu_follows_the_product(g)) {
    GemmArgsOf<T, Out> product = g;
    product.activation = GemmActivation::none;
    run_on_this_thread(product);
    GemmArgsOf<T, Out> gelu = g;
    gelu.bias = nullptr;  // oneDNN added them
    gelu.residual = nullptr;
    for_each_group(gelu, [](const GemmArgsOf<T, Out>& group) { finish_rows(group); });
    return;
  }
  const onednn::OnCallingThread one_thread;
  const std::shared_ptr<const MatmulPrimitive> p = primitive_cache().get<MatmulPrimitive>(
      key_of(g), [&] { return std::make_shared<const MatmulPrimitive>(build(g)); });
  std::array<onednn::Argument, 6> arguments;
  std::size_t count = 0;
  arguments[count++] = {DNNL_ARG_SRC, &p->a.data, g.a};
  arguments[count++] = {DNNL_ARG_WEIGHTS, &p->b.data, g.b};
  arguments[count++] = {DNNL_ARG_DST, &p->c.data, g.c};
  arguments[count++] = {DNNL_ARG_SCRATCHPAD, &p->scratchpad.data, onednn::scratchpad(p->scratchpad.get_size())};
  if (g.bias != nullptr) arguments[count++] = {DNNL_ARG_BIAS, &p->bias.data, g.bias};
  if (g.residual != nullptr) {
    arguments[count++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(p->residual_post_op) | DNNL_ARG_SRC_1, &p->c.data, g.residual};
  }
  onednn::execute(p->primitive.get(), std::span(arguments.data(), count));
}

// Splits [0, extent) into `parts` ranges whose bounds are multiples of `align`.
void split_range(std::int64_t extent, std::int64_t parts, std::int64_t part, std::int64_t align, std::int64_t& begin,
                 std::int64_t& end) {
  const std::int64_t units = (extent + align - 1) / align;
  begin = std::min(extent, units * part / parts * align);
  end = std::min(extent, units * (part + 1) / parts * align);
}

// Task `task` of `tasks` when the matrices are cut into contiguous runs, one call each: runs of
// whole outer groups, or runs of the inner batch taken from every group.
template <class Args>
Args batch_run(const Args& g, bool outer, std::int64_t tasks, std::int64_t task) {
  const std::int64_t extent = outer ? g.batch_outer : g.batch;
  const std::int64_t begin = extent * task / tasks, end = extent * (task + 1) / tasks;
  Args run = g;
  (outer ? run.batch_outer : run.batch) = end - begin;
  run.a += begin * (outer ? g.outer_stride_a : g.stride_a);
  run.b += begin * (outer ? g.outer_stride_b : g.stride_b);
  advance_c(run, begin * (outer ? g.outer_stride_c : g.stride_c));
  return run;
}

// Tile `part` of `parts` of matrix `index`, cut along the longer side of C (the shorter operand
// is then read whole by every tile).
template <class Args>
Args matrix_tile(const Args& g, std::int64_t index, std::int64_t parts, std::int64_t part) {
  Args tile = outer_group(g, index / g.batch);
  tile.batch = 1;
  tile.a += index % g.batch * g.stride_a;
  tile.b += index % g.batch * g.stride_b;
  advance_c(tile, index % g.batch * g.stride_c);
  std::int64_t begin, end;
  if (g.m >= g.n) {
    split_range(g.m, parts, part, kTileAlign, begin, end);
    tile.m = end - begin;
    tile.a += begin * (g.transpose_a ? 1 : g.lda);
    advance_c(tile, begin * g.ldc);
  } else {
    split_range(g.n, parts, part, kTileAlign, begin, end);
    tile.n = end - begin;
    tile.b += begin * (g.transpose_b ? g.ldb : 1);
    advance_c(tile, begin);
    if (tile.bias != nullptr) tile.bias += begin;
  }
  return tile;
}

// The epilogue comes after a plain product: with alpha or beta, oneDNN and the kernels that finish
// their own rows would combine them differently.
template <class T, class Out>
void require_plain_product_under_epilogue(const GemmArgsOf<T, Out>& args) {
  if (has_epilogue(args) && (args.alpha != 1.0f || args.beta != 0.0f)) {
    throw ValueError(op_message("gemm", "a bias, residual or activation needs alpha = 1 and beta = 0; got " +
                                            describe(args) + " alpha=" + std::to_string(args.alpha) +
                                            " beta=" + std::to_string(args.beta)));
  }
}

template <class T, class Out>
void serial(const GemmArgsOf<T, Out>& args) {
  require_plain_product_under_epilogue(args);
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0 || args.batch_outer <= 0) return;
  run_on_this_thread(with_leading_dims(args));
}

// With AVX-512 oneDNN packs both operands (brgemm), and it copies a transposed A column by column,
// which is slow when A is large; a plain B it copies in rows. So a product C = A^T B whose C is
// much taller than wide (a weight gradient X^T dY with many more inputs than outputs, GPT-tiny's
// tied embedding's above all) runs faster as its transpose C^T = B^T A^T, whose transposed
// operand is the small one, followed by a transpose of C, when the depth is long enough for the
// faster product to pay for that transpose. 2 threads, AMD EPYC Zen 5 (avx512_bf16), ms:
// m=8192 n=256 k=2048 float32 23.7 against 19.2 + 0.4, bfloat16 12.4 against 10.1;
// m=1024 n=256 k=2048 float32 2.68 against 2.36 + 0.05; m=512 n=128 k=4096 float32 1.10 against
// 1.08 + 0.01, the aspect where it stops paying; and with the transpose included, m=8192 n=256
// k=512 5.17 as written against 5.37, k=256 2.41 against 2.83 (a replica's share of GPT-tiny's
// batch), the depths where it does not. Products with an epilogue, beta, a batch or a strided C
// stay as they are.
template <class T, class Out>
bool runs_faster_transposed(const GemmArgsOf<T, Out>& g) {
  // oneDNN packs at the avx512 level, for both dtypes (below it float32 long thin products go to
  // Eigen's packed kernel and bfloat16 is widened).
  const bool onednn_packs = cpu_capability() == CpuCapability::avx512;
  return onednn_packs && g.transpose_a && !g.transpose_b && g.batch == 1 && g.batch_outer == 1 && g.ldc == g.n &&
         g.beta == 0.0f && !has_epilogue(g) && g.m >= kMinTransposedAspect * g.n && g.k >= kMinTransposedDepth &&
         g.m * g.n * g.k >= kMinTransposedMacs;
}

template <class T, class Out>
void tiled(const GemmArgsOf<T, Out>& args);

// C = A^T B (g's leading dims filled) computed as C^T = B^T A^T into the calling thread's
// scratch, then transposed into C.
template <class T, class Out>
void transposed_product(const GemmArgsOf<T, Out>& g) {
  thread_local AlignedBuffer<Out> scratch;  // grows to the largest C seen, then stays
  GemmArgsOf<T, Out> swapped = g;
  swapped.m = g.n;
  swapped.n = g.m;
  swapped.a = g.b;
  swapped.lda = g.ldb;
  swapped.transpose_a = true;
  swapped.b = g.a;
  swapped.ldb = g.lda;
  swapped.transpose_b = false;
  swapped.c = scratch.get(static_cast<std::size_t>(g.m * g.n));
  swapped.ldc = g.m;
  tiled(swapped);
  constexpr std::array<int, 2> kSwapAxes = {1, 0};
  transpose(TensorView{swapped.c, Shape{g.n, g.m}, dtype_of<Out>()}, TensorView{g.c, Shape{g.m, g.n}, dtype_of<Out>()},
            kSwapAxes);
}

template <class T, class Out>
void tiled(const GemmArgsOf<T, Out>& args) {
  require_plain_product_under_epilogue(args);
  if (args.m <= 0 || args.n <= 0 || args.batch <= 0 || args.batch_outer <= 0) return;
  const GemmArgsOf<T, Out> g = with_leading_dims(args);
  if (runs_faster_transposed(g)) {
    transposed_product(g);
    return;
  }
  const std::int64_t matrices = g.batch_outer * g.batch;
  const std::int64_t macs = matrices * g.m * g.n * std::max<std::int64_t>(g.k, 1);
  // The tiles depend on num_threads() alone, not on where they run: under a SerialKernelsScope
  // they run one after another on the calling thread and give the very same bits.
  const std::int64_t threads = std::min<std::int64_t>(num_threads(), macs / kMinMacsPerTask);
  if (threads <= 1) {
    run_on_this_thread(g);
    return;
  }
  // Runs of whole matrices when a batch level divides evenly (a batched call each); otherwise
  // every matrix is cut into `threads` tiles. Tasks are claimed one at a time, so a thread slowed
  // by other load does less of the work; which thread runs a task does not change its result.
  const bool by_outer = g.batch_outer % threads == 0;
  const bool by_batch = by_outer || g.batch % threads == 0;
  const std::int64_t tasks = by_batch ? threads : matrices * threads;
  std::atomic<std::int64_t> next{0};
  parallel_for(threads, 1, [&](std::int64_t, std::int64_t) {
    for (std::int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) {
      const GemmArgsOf<T, Out> part =
          by_batch ? batch_run(g, by_outer, tasks, task) : matrix_tile(g, task / threads, threads, task % threads);
      if (part.m > 0 && part.n > 0) run_on_this_thread(part);
    }
  });
}

}  // namespace

void gemm(const GemmArgs& args) { tiled(args); }
void gemm(const GemmBf16Args& args) { tiled(args); }
void gemm(const GemmBf16Float32Args& args) { tiled(args); }

void gemm_serial(const GemmArgs& args) { serial(args); }
void gemm_serial(const GemmBf16Args& args) { serial(args); }
void gemm_serial(const GemmBf16Float32Args& args) { serial(args); }

}  // namespace kestrel::kernels
