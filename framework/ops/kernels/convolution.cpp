#include "framework/ops/kernels/convolution.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/onednn.h"
#include "framework/ops/kernels/primitive_cache.h"

namespace kestrel::kernels {
namespace {

using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

// Below this many multiply-adds per extra thread, waking a worker costs more than it saves.
constexpr std::int64_t kMinMacsPerTask = std::int64_t{1} << 21;
constexpr std::int64_t kConvolutionKind = 2;  // PrimitiveKey's first field
// Images and outputs widened at a time by one thread for bfloat16 below AVX-512 (1 MiB in all).
constexpr std::int64_t kWidenedElements = std::int64_t{1} << 18;

enum class Direction : std::int64_t { forward, backward_weights };

// A oneDNN convolution for one run of images. Its filter may be in a blocked layout of oneDNN's
// choosing (the fast kernels want one): the reorder converts Keras's [kh, kw, in, out] into it
// (forward) or back from it (backward_weights); absent when they are the same.
struct ConvPrimitive {
  dnnl::primitive primitive;
  dnnl::memory::desc image, output;  // NHWC: x, and y or dy
  dnnl::memory::desc filter, keras_filter, scratchpad;
  std::optional<dnnl::reorder> reorder;
};

std::string describe(const ConvShape& s, std::int64_t images) {
  return "x [" + std::to_string(images) + "," + std::to_string(s.in_h) + "," + std::to_string(s.in_w) + "," +
         std::to_string(s.in_c) + "], filter [" + std::to_string(s.k_h) + "," + std::to_string(s.k_w) + "," +
         std::to_string(s.in_c) + "," + std::to_string(s.out_c) + "], strides " + std::to_string(s.stride_h) + "x" +
         std::to_string(s.stride_w);
}

// `type` is the images' and outputs' (f32 or bf16); the forward filter has it too, and the filter
// gradient is always f32, so that the runs' sums round once.
ConvPrimitive build(Direction direction, DataType type, const ConvShape& s, std::int64_t images) {
  ConvPrimitive p;
  const DataType filter_type = direction == Direction::forward ? type : DataType::f32;
  p.image = dnnl::memory::desc({images, s.in_c, s.in_h, s.in_w}, type, Tag::nhwc);
  p.output = dnnl::memory::desc({images, s.out_c, s.out_h, s.out_w}, type, Tag::nhwc);
  p.keras_filter = dnnl::memory::desc({s.out_c, s.in_c, s.k_h, s.k_w}, filter_type, Tag::hwio);
  const dnnl::memory::desc any_filter({s.out_c, s.in_c, s.k_h, s.k_w}, filter_type, Tag::any);
  const dnnl::memory::desc any_forward_filter({s.out_c, s.in_c, s.k_h, s.k_w}, type, Tag::any);
  const Dims strides = {s.stride_h, s.stride_w};
  const Dims pad_before = {s.pad_top, s.pad_left};
  // Negative when a valid window leaves input rows or columns unread (oneDNN accepts that).
  const Dims pad_after = {(s.out_h - 1) * s.stride_h + s.k_h - s.in_h - s.pad_top,
                          (s.out_w - 1) * s.stride_w + s.k_w - s.in_w - s.pad_left};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const char* op = direction == Direction::forward ? "conv2d" : "conv2d_backprop_filter";
  try {
    const dnnl::engine engine(onednn::engine(), /*weak=*/true);
    const dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, p.image,
                                        any_forward_filter, p.output, strides, pad_before, pad_after),
        attr, engine);
    switch (direction) {
      case Direction::forward:
        p.primitive = dnnl::convolution_forward(forward);
        p.filter = forward.weights_desc();
        p.scratchpad = forward.scratchpad_desc();
        break;
      case Direction::backward_weights: {
        const dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, p.image, any_filter, p.output,
                                                     strides, pad_before, pad_after),
            attr, engine, forward);
        p.primitive = dnnl::convolution_backward_weights(pd);
        p.filter = pd.diff_weights_desc();
        p.scratchpad = pd.scratchpad_desc();
        break;
      }
    }
    if (p.filter != p.keras_filter) {
      const bool to_keras = direction == Direction::backward_weights;
      const dnnl::reorder::primitive_desc pd(engine, to_keras ? p.filter : p.keras_filter, engine,
                                             to_keras ? p.keras_filter : p.filter, attr);
      KESTREL_DCHECK(pd.scratchpad_desc().get_size() == 0);
      p.reorder = dnnl::reorder(pd);
    }
  } catch (const dnnl::error& e) {
    throw Error(op_message(op, "oneDNN cannot build a convolution for " + describe(s, images) + ": " + e.what() +
                                   "; a Kestrel bug: report it with this message (DNNL_VERBOSE=1 shows oneDNN's "
                                   "reasons)"));
  }
  return p;
}

std::shared_ptr<const ConvPrimitive> primitive_for(Direction direction, DataType type, const ConvShape& s,
                                                   std::int64_t images) {
  const PrimitiveKey key = {kConvolutionKind,
                            static_cast<std::int64_t>(direction) << 8 | static_cast<std::int64_t>(type),
                            images,
                            s.in_h,
                            s.in_w,
                            s.in_c,
                            s.k_h,
                            s.k_w,
                            s.out_c,
                            s.out_h,
                            s.out_w,
                            s.pad_top,
                            s.pad_left,
                            s.stride_h,
                            s.stride_w};
  return primitive_cache().get<ConvPrimitive>(
      key, [&] { return std::make_shared<const ConvPrimitive>(build(direction, type, s, images)); });
}

// One run of `images` images on the calling thread. `image` is x, `output` y or dy, and
// `filter` Keras's layout, each offset to the run by the caller; oneDNN takes every operand
// through a non-const handle, the ones it only reads included.
void run(Direction direction, DataType type, const ConvShape& s, std::int64_t images, void* image, void* output,
         void* filter) {
  const onednn::OnCallingThread one_thread;
  const std::shared_ptr<const ConvPrimitive> p = primitive_for(direction, type, s, images);
  // This thread's buffer holds the scratchpad, then the filter in oneDNN's layout if it differs.
  const std::size_t scratch_bytes = (p->scratchpad.get_size() + 63) / 64 * 64;
  auto* buffer =
      static_cast<std::byte*>(onednn::scratchpad(scratch_bytes + (p->reorder ? p->filter.get_size() : std::size_t{0})));
  void* weights = p->reorder ? static_cast<void*>(buffer + scratch_bytes) : filter;
  const onednn::Argument scratchpad = {DNNL_ARG_SCRATCHPAD, &p->scratchpad.data, buffer};
  if (direction == Direction::forward) {
    // Into oneDNN's layout: from the caller's filter (FROM) into this thread's buffer (TO).
    if (p->reorder) {
      onednn::execute(p->reorder->get(),
                      {{DNNL_ARG_FROM, &p->keras_filter.data, filter}, {DNNL_ARG_TO, &p->filter.data, weights}});
    }
    onednn::execute(p->primitive.get(), {{DNNL_ARG_SRC, &p->image.data, image},
                                         {DNNL_ARG_WEIGHTS, &p->filter.data, weights},
                                         {DNNL_ARG_DST, &p->output.data, output},
                                         scratchpad});
  } else {
    onednn::execute(p->primitive.get(), {{DNNL_ARG_SRC, &p->image.data, image},
                                         {DNNL_ARG_DIFF_WEIGHTS, &p->filter.data, weights},
                                         {DNNL_ARG_DIFF_DST, &p->output.data, output},
                                         scratchpad});
    // Back to Keras's layout: from oneDNN's (FROM) into the caller's filter (TO).
    if (p->reorder) {
      onednn::execute(p->reorder->get(),
                      {{DNNL_ARG_FROM, &p->filter.data, weights}, {DNNL_ARG_TO, &p->keras_filter.data, filter}});
    }
  }
}

// The number of runs the images are split into: as many as threads that each get enough work.
// It depends on the shape and num_threads() alone, not on where the runs execute.
std::int64_t runs_for(const ConvShape& s) {
  const std::int64_t macs = s.batch * s.out_h * s.out_w * s.out_c * s.k_h * s.k_w * s.in_c;
  return std::max<std::int64_t>(1, std::min<std::int64_t>({num_threads(), macs / kMinMacsPerTask, s.batch}));
}

// Calls fn(run, first image, images) for each run over the pool; a run goes to whichever thread
// claims it next, so a thread slowed by other load does less of the work.
template <class Fn>
void for_each_run(const ConvShape& s, std::int64_t runs, Fn&& fn) {
  std::atomic<std::int64_t> next{0};
  parallel_for(runs, 1, [&](std::int64_t, std::int64_t) {
    for (std::int64_t r = next.fetch_add(1); r < runs; r = next.fetch_add(1)) {
      const std::int64_t first = s.batch * r / runs;
      fn(r, first, s.batch * (r + 1) / runs - first);
    }
  });
}

// The filter gradient summed over runs of images: run_images(first, images, sum) writes a run's
// float32 sum, run 0's into dw and the others' into partials; those are then added into dw in
// run order, so the result does not depend on which thread finished first.
template <class RunFn>
void sum_over_runs(const ConvShape& s, float* dw, float* partials, std::int64_t runs, RunFn&& run_images) {
  const std::int64_t filter_size = s.k_h * s.k_w * s.in_c * s.out_c;
  for_each_run(s, runs, [&](std::int64_t r, std::int64_t first, std::int64_t images) {
    run_images(first, images, r == 0 ? dw : partials + (r - 1) * filter_size);
  });
  for (std::int64_t r = 1; r < runs; ++r) {
    const float* src = partials + (r - 1) * filter_size;
    for (std::int64_t i = 0; i < filter_size; ++i) dw[i] += src[i];
  }
}

// Below AVX-512, a run of bfloat16 images goes through the float32 primitive in chunks of
// per_chunk images (one at least), whose widened images and outputs fit in kWidenedElements: the
// calling thread's buffers, never a float32 copy of the whole batch.
struct WidenedChunks {
  std::int64_t per_chunk;
  float* image;
  float* output;
};
WidenedChunks widened_chunks(const ConvShape& s) {
  thread_local AlignedBuffer<float> image, output;
  const std::int64_t image_size = s.in_h * s.in_w * s.in_c, output_size = s.out_h * s.out_w * s.out_c;
  const std::int64_t per_chunk =
      std::min(s.batch, std::max<std::int64_t>(1, kWidenedElements / (image_size + output_size)));
  return {per_chunk, image.get(static_cast<std::size_t>(per_chunk * image_size)),
          output.get(static_cast<std::size_t>(per_chunk * output_size))};
}

}  // namespace

void convolution_forward(const ConvShape& s, const float* x, const float* w, float* y) {
  if (s.batch == 0) return;
  const std::int64_t image = s.in_h * s.in_w * s.in_c, output = s.out_h * s.out_w * s.out_c;
  for_each_run(s, runs_for(s), [&](std::int64_t, std::int64_t first, std::int64_t images) {
    run(Direction::forward, DataType::f32, s, images, const_cast<float*>(x + first * image), y + first * output,
        const_cast<float*>(w));
  });
}

void convolution_forward(const ConvShape& s, const bfloat16* x, const bfloat16* w, bfloat16* y) {
  if (s.batch == 0) return;
  const std::int64_t image = s.in_h * s.in_w * s.in_c, output = s.out_h * s.out_w * s.out_c;
  if (onednn::computes_bf16()) {
    for_each_run(s, runs_for(s), [&](std::int64_t, std::int64_t first, std::int64_t images) {
      run(Direction::forward, DataType::bf16, s, images, const_cast<bfloat16*>(x + first * image), y + first * output,
          const_cast<bfloat16*>(w));
    });
    return;
  }
  // The filter once, for every run: with the few input channels direct convolution is for, it is small.
  const std::int64_t filter_size = s.k_h * s.k_w * s.in_c * s.out_c;
  std::vector<float> wide_w(static_cast<std::size_t>(filter_size));
  cpu().widen_bfloat16(w, filter_size, wide_w.data());
  for_each_run(s, runs_for(s), [&](std::int64_t, std::int64_t first, std::int64_t images) {
    const WidenedChunks chunks = widened_chunks(s);
    for (std::int64_t n = first; n < first + images; n += chunks.per_chunk) {
      const std::int64_t count = std::min(chunks.per_chunk, first + images - n);
      cpu().widen_bfloat16(x + n * image, count * image, chunks.image);
      run(Direction::forward, DataType::f32, s, count, chunks.image, chunks.output, wide_w.data());
      cpu().round_to_bfloat16(chunks.output, count * output, y + n * output);
    }
  });
}

void convolution_backward_weights(const ConvShape& s, const float* x, const float* dy, float* dw) {
  const std::int64_t filter_size = s.k_h * s.k_w * s.in_c * s.out_c;
  if (s.batch == 0) {
    std::fill(dw, dw + filter_size, 0.0f);
    return;
  }
  const std::int64_t image = s.in_h * s.in_w * s.in_c, output = s.out_h * s.out_w * s.out_c;
  const std::int64_t runs = runs_for(s);
  std::vector<float> partials(static_cast<std::size_t>((runs - 1) * filter_size));
  sum_over_runs(s, dw, partials.data(), runs, [&](std::int64_t first, std::int64_t images, float* sum) {
    run(Direction::backward_weights, DataType::f32, s, images, const_cast<float*>(x + first * image),
        const_cast<float*>(dy + first * output), sum);
  });
}

void convolution_backward_weights(const ConvShape& s, const bfloat16* x, const bfloat16* dy, bfloat16* dw) {
  const std::int64_t filter_size = s.k_h * s.k_w * s.in_c * s.out_c;
  const std::int64_t image = s.in_h * s.in_w * s.in_c, output = s.out_h * s.out_w * s.out_c;
  const std::int64_t runs = runs_for(s);
  // Every run's sum in float32, rounded once at the end.
  std::vector<float> sums(static_cast<std::size_t>(runs * filter_size));
  if (s.batch > 0 && onednn::computes_bf16()) {
    sum_over_runs(s, sums.data(), sums.data() + filter_size, runs,
                  [&](std::int64_t first, std::int64_t images, float* sum) {
                    run(Direction::backward_weights, DataType::bf16, s, images,
                        const_cast<bfloat16*>(x + first * image), const_cast<bfloat16*>(dy + first * output), sum);
                  });
  } else if (s.batch > 0) {
    sum_over_runs(s, sums.data(), sums.data() + filter_size, runs,
                  [&](std::int64_t first, std::int64_t images, float* sum) {
                    const WidenedChunks chunks = widened_chunks(s);
                    thread_local AlignedBuffer<float> chunk_sum_buffer;
                    float* chunk_sum = chunk_sum_buffer.get(static_cast<std::size_t>(filter_size));
                    for (std::int64_t n = first; n < first + images; n += chunks.per_chunk) {
                      const std::int64_t count = std::min(chunks.per_chunk, first + images - n);
                      cpu().widen_bfloat16(x + n * image, count * image, chunks.image);
                      cpu().widen_bfloat16(dy + n * output, count * output, chunks.output);
                      float* into = n == first ? sum : chunk_sum;
                      run(Direction::backward_weights, DataType::f32, s, count, chunks.image, chunks.output, into);
                      if (into != sum) {
                        for (std::int64_t i = 0; i < filter_size; ++i) sum[i] += chunk_sum[i];
                      }
                    }
                  });
  }
  cpu().round_to_bfloat16(sums.data(), filter_size, dw);
}

}  // namespace kestrel::kernels
