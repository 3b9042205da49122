// conv2d and its two gradients, NHWC with Keras's filter layout [kh, kw, in, out].
//
// im2col: each output pixel's window is copied into one row of a patch matrix laid out
// [kh, kw, in], like the filter's leading axes, so the convolution is the product
// patches [pixels, kh*kw*in] x filter [kh*kw*in, out], which writes NHWC rows directly. The input
// gradient is dy x filter^T scattered back through the same windows (col2im); the filter
// gradient is patches^T x dy. Pixels go in blocks so a block's patches stay in cache. With few
// input channels, the forward pass and the filter gradient run on oneDNN's direct convolution
// instead (kernels/convolution.h; direct_applies says when and why).
//
// bfloat16 runs the same way on bfloat16 patches (copies, so exact) and bfloat16 products that
// sum in float32 (kernels/gemm.h): what adds up over several products (the filter gradient's
// blocks, the input gradient's overlapping windows) stays float32 until it is rounded once.
#include "framework/ops/conv.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/kernels/aligned_buffer.h"
#include "framework/ops/kernels/convolution.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/gemm.h"
#include "framework/ops/kernels/window.h"
#include "framework/ops/primitive.h"

namespace kestrel::ops {
namespace {

using kernels::output_extent;
using kernels::pad_before;
using kernels::padding_name;

// Elements per block (256 KiB): im2col's patches and the GEMM's output rows stay in L2.
constexpr std::int64_t kBlockElements = 1 << 16;
constexpr std::int64_t kMinBlockRows = 32;
// Multiply-adds below which a share of the work is not worth waking another thread for.
constexpr std::int64_t kMinMacsPerTask = 1 << 20;

std::string options_text(int stride_h, int stride_w, Padding padding) {
  return "strides " + std::to_string(stride_h) + "x" + std::to_string(stride_w) + ", padding " + padding_name(padding);
}

struct ConvGeometry {
  std::int64_t batch, in_h, in_w, in_c;
  std::int64_t k_h, k_w, out_c;
  std::int64_t out_h, out_w;
  std::int64_t pad_top, pad_left;
  int stride_h, stride_w;

  std::int64_t patch_size() const { return k_h * k_w * in_c; }
  std::int64_t pixels_per_image() const { return out_h * out_w; }
  std::int64_t rows() const { return batch * out_h * out_w; }
  Shape output_shape() const { return {batch, out_h, out_w, out_c}; }
};

void check_strides(std::string_view op, int stride_h, int stride_w) {
  if (stride_h < 1 || stride_w < 1) {
    throw ValueError(op_message(op, "strides are {" + std::to_string(stride_h) + ", " + std::to_string(stride_w) +
                                        "}; each stride must be >= 1"));
  }
}

// Both operands float; the primitives also need one dtype (the public functions promote).
void check_float_pair(std::string_view op, const char* a_name, const TensorSpec& a, const char* b_name,
                      const TensorSpec& b, bool same_dtype = true) {
  if (!is_floating(a.dtype) || !is_floating(b.dtype) || (same_dtype && a.dtype != b.dtype)) {
    throw TypeError(op_message(op, std::string(a_name) + " is " + a.to_string() + ", " + b_name + " is " +
                                       b.to_string() + ": " + std::string(op) +
                                       " needs float32 or bfloat16 operands of one dtype (cast with ops::cast)"));
  }
}

// Validates an input shape, a filter shape and the options; names them as the caller sees them.
ConvGeometry conv_geometry(std::string_view op, const char* input_name, const Shape& input, const char* filter_name,
                           const Shape& filter, int stride_h, int stride_w, Padding padding) {
  check_strides(op, stride_h, stride_w);
  const std::string both =
      std::string(input_name) + " is " + input.to_string() + ", " + filter_name + " is " + filter.to_string();
  if (input.rank() != 4) {
    throw ShapeError(op_message(op, std::string(input_name) + " is " + input.to_string() +
                                        ": conv2d needs a rank-4 NHWC input [batch, height, width, channels]"));
  }
  if (filter.rank() != 4) {
    throw ShapeError(op_message(op, std::string(filter_name) + " is " + filter.to_string() +
                                        ": the filter must be rank 4 [kh, kw, in_channels, out_channels]"));
  }
  if (filter[2] != input[3]) {
    throw ShapeError(op_message(op, both + ": the filter expects " + std::to_string(filter[2]) +
                                        " input channels but the input has " + std::to_string(input[3]) +
                                        " (NHWC: channels are the last axis)"));
  }
  if (filter[0] < 1 || filter[1] < 1) {
    throw ShapeError(op_message(op, both + ": the filter window must be at least 1x1"));
  }
  if (padding == Padding::valid && (filter[0] > input[1] || filter[1] > input[2])) {
    throw ShapeError(op_message(op, both + ": the " + std::to_string(filter[0]) + "x" + std::to_string(filter[1]) +
                                        " window does not fit in the " + std::to_string(input[1]) + "x" +
                                        std::to_string(input[2]) +
                                        " image with valid padding; use padding same or a smaller filter"));
  }
  ConvGeometry g{};
  g.batch = input[0];
  g.in_h = input[1];
  g.in_w = input[2];
  g.in_c = input[3];
  g.k_h = filter[0];
  g.k_w = filter[1];
  g.out_c = filter[3];
  g.stride_h = stride_h;
  g.stride_w = stride_w;
  g.out_h = output_extent(g.in_h, g.k_h, stride_h, padding);
  g.out_w = output_extent(g.in_w, g.k_w, stride_w, padding);
  g.pad_top = pad_before(g.in_h, g.out_h, g.k_h, stride_h);
  g.pad_left = pad_before(g.in_w, g.out_w, g.k_w, stride_w);
  return g;
}

// dy must be exactly what conv2d would produce for the given input and filter shapes.
void check_dy(std::string_view op, const ConvGeometry& g, const Shape& input, const Shape& filter, const Shape& dy,
              Padding padding) {
  if (dy != g.output_shape()) {
    throw ShapeError(op_message(op, "dy is " + dy.to_string() + ", but conv2d of an input " + input.to_string() +
                                        " with a filter " + filter.to_string() + " (" +
                                        options_text(g.stride_h, g.stride_w, padding) + ") gives " +
                                        g.output_shape().to_string()));
  }
}

// The offsets [begin, end) of a window starting at `start` that fall inside [0, extent).
struct Inside {
  std::int64_t begin, end;
};
Inside inside(std::int64_t start, std::int64_t window, std::int64_t extent) {
  const std::int64_t begin = std::clamp<std::int64_t>(-start, 0, window);
  return {begin, std::max(begin, std::clamp<std::int64_t>(extent - start, 0, window))};
}

// Plain loops rather than memcpy/memset: a window row is often only a few elements (one channel,
// three columns), where a library call costs more than the copy.
template <class T>
inline void copy_elements(const T* src, std::int64_t count, T* dst) {
  for (std::int64_t t = 0; t < count; ++t) dst[t] = src[t];
}
template <class T>
inline void zero_elements(T* dst, std::int64_t count) {
  for (std::int64_t t = 0; t < count; ++t) dst[t] = T{};
}

// Rows [r0, r1) of the patch matrix, one output pixel each; padding reads as zero.
template <class T>
void im2col(const ConvGeometry& g, const T* input, std::int64_t r0, std::int64_t r1, T* patches) {
  const std::int64_t c = g.in_c;
  const std::int64_t window_row = g.k_w * c;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t n = r / g.pixels_per_image();
    const std::int64_t i = r % g.pixels_per_image() / g.out_w;
    const std::int64_t j = r % g.out_w;
    const std::int64_t y0 = i * g.stride_h - g.pad_top;
    const std::int64_t x0 = j * g.stride_w - g.pad_left;
    const Inside cols = inside(x0, g.k_w, g.in_w);
    const std::int64_t before = cols.begin * c;
    const std::int64_t count = (cols.end - cols.begin) * c;
    T* dst = patches + (r - r0) * g.patch_size();
    for (std::int64_t di = 0; di < g.k_h; ++di, dst += window_row) {
      const std::int64_t y = y0 + di;
      if (y < 0 || y >= g.in_h) {
        zero_elements(dst, window_row);
        continue;
      }
      zero_elements(dst, before);
      copy_elements(input + ((n * g.in_h + y) * g.in_w + x0) * c + before, count, dst + before);
      zero_elements(dst + before + count, window_row - before - count);
    }
  }
}

// The transpose of im2col: adds patch rows [r0, r1) back into the images they came from, `images`
// holding images first_image on.
void col2im(const ConvGeometry& g, const float* patches, std::int64_t r0, std::int64_t r1, float* images,
            std::int64_t first_image = 0) {
  const std::int64_t c = g.in_c;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t n = r / g.pixels_per_image();
    const std::int64_t i = r % g.pixels_per_image() / g.out_w;
    const std::int64_t j = r % g.out_w;
    const std::int64_t y0 = i * g.stride_h - g.pad_top;
    const std::int64_t x0 = j * g.stride_w - g.pad_left;
    const Inside cols = inside(x0, g.k_w, g.in_w);
    const std::int64_t count = (cols.end - cols.begin) * c;
    for (std::int64_t di = 0; di < g.k_h; ++di) {
      const std::int64_t y = y0 + di;
      if (y < 0 || y >= g.in_h) continue;
      const float* src = patches + (r - r0) * g.patch_size() + (di * g.k_w + cols.begin) * c;
      float* dst = images + (((n - first_image) * g.in_h + y) * g.in_w + x0 + cols.begin) * c;
      for (std::int64_t t = 0; t < count; ++t) dst[t] += src[t];
    }
  }
}

// A 1x1 filter with stride 1 reads every pixel once: the input already is the patch matrix.
bool is_pointwise(const ConvGeometry& g) { return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1; }

// The calling thread's buffer of at least `count` elements; Tag tells apart buffers in use at once.
template <class T, int Tag = 0>
T* thread_buffer(std::int64_t count) {
  thread_local kernels::AlignedBuffer<T> buffer;
  return buffer.get(static_cast<std::size_t>(count));
}

// Pixel blocks: about kBlockElements elements in a block's patches and in its output rows, and a
// multiple of the thread count when there are few, so the threads get equal shares.
struct Blocks {
  std::int64_t rows_per_block, count;
};
Blocks pixel_blocks(std::int64_t rows, std::int64_t patch_size, std::int64_t channels) {
  std::int64_t per = std::max(kMinBlockRows, kBlockElements / std::max<std::int64_t>({patch_size, channels, 1}));
  std::int64_t count = (rows + per - 1) / per;
  const std::int64_t threads = num_threads();
  if (count > 1 && count < 4 * threads) {
    count = (count + threads - 1) / threads * threads;
    per = (rows + count - 1) / count;
    count = (rows + per - 1) / per;
  }
  return {per, count};
}

std::int64_t grain_for(std::int64_t macs_per_item) {
  return std::max<std::int64_t>(1, kMinMacsPerTask / std::max<std::int64_t>(macs_per_item, 1));
}

// Runs body(begin, end, gemm) over [0, count). With two grains of work or more the range is
// split over the pool and each share multiplies on its own thread (gemm_serial); otherwise one
// call covers it all and its products may use the pool themselves (gemm).
template <class Body>
void for_each_share(std::int64_t count, std::int64_t grain, Body&& body) {
  if (num_threads() > 1 && count / grain >= 2) {
    parallel_for(count, grain, [&](std::int64_t b, std::int64_t e) {
      body(b, e, [](const auto& args) { kernels::gemm_serial(args); });
    });
  } else if (count > 0) {
    body(0, count, [](const auto& args) { kernels::gemm(args); });
  }
}

// oneDNN's direct convolution instead of im2col + gemm, for the forward pass and the filter
// gradient of inputs with few channels. im2col copies every pixel k_h * k_w times and leaves a
// thin product (depth 9 * in_c for a 3x3 filter) that cannot amortize the copy; the direct kernel
// reads the image in place. From 32 channels on, the gemm's blocking wins over oneDNN's AVX2
// direct kernels (jit:avx2), and the input gradient is never faster direct. kernels_bench on
// Zen 3 (AVX2), CNN layers, 1 thread, median ms of 4 alternated runs, im2col vs direct:
//   in=1 [128,28,28,1] * [3,3,1,32]:    conv2d 4.48 vs 1.47, backprop_filter 5.74 vs 1.75
//   in=32 [128,13,13,32] * [3,3,32,64]: conv2d 14.47 vs 17.86, backprop_filter 15.02 vs 22.31,
//                                        backprop_input 14.68 vs 15.00
// and in a one-off comparison by CPU time (ms), conv2d at in=8 and 16: 3.6 vs 2.5 and 8.3 vs 5.9,
// backprop_filter at in=3 and 8: 5.7 vs 3.6 and 3.7 vs 3.9. On AVX-512 oneDNN has other direct
// kernels (brgemm-based); these limits were measured on AVX2 only.
constexpr std::int64_t kMaxDirectForwardChannels = 16;
constexpr std::int64_t kMaxDirectFilterGradientChannels = 4;

bool direct_applies(const ConvGeometry& g, std::int64_t max_channels) {
  // A 1x1 stride-1 filter needs no im2col at all: it is one gemm.
  return !is_pointwise(g) && g.in_c > 0 && g.in_c <= max_channels && g.out_c > 0 && g.rows() > 0;
}

kernels::ConvShape shape_of(const ConvGeometry& g) {
  return {.batch = g.batch,
          .in_h = g.in_h,
          .in_w = g.in_w,
          .in_c = g.in_c,
          .k_h = g.k_h,
          .k_w = g.k_w,
          .out_c = g.out_c,
          .out_h = g.out_h,
          .out_w = g.out_w,
          .pad_top = g.pad_top,
          .pad_left = g.pad_left,
          .stride_h = g.stride_h,
          .stride_w = g.stride_w};
}

template <class T>
void conv2d_kernel(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const std::int64_t rows = g.rows();
  const std::int64_t k = g.patch_size();
  if (rows == 0 || g.out_c == 0) return;
  if (direct_applies(g, kMaxDirectForwardChannels)) {
    kernels::convolution_forward(shape_of(g), x, w, y);
    return;
  }
  if (is_pointwise(g) || k == 0) {
    kernels::gemm(kernels::GemmArgsOf<T>{.m = rows, .n = g.out_c, .k = k, .a = x, .b = w, .c = y});
    return;
  }
  const Blocks blocks = pixel_blocks(rows, k, g.out_c);
  for_each_share(
      blocks.count, grain_for(blocks.rows_per_block * k * g.out_c), [&](std::int64_t b, std::int64_t e, auto gemm) {
        T* patches = thread_buffer<T>(blocks.rows_per_block * k);
        for (std::int64_t block = b; block < e; ++block) {
          const std::int64_t r0 = block * blocks.rows_per_block;
          const std::int64_t r1 = std::min(rows, r0 + blocks.rows_per_block);
          im2col(g, x, r0, r1, patches);
          gemm(kernels::GemmArgsOf<T>{.m = r1 - r0, .n = g.out_c, .k = k, .a = patches, .b = w, .c = y + r0 * g.out_c});
        }
      });
}

template <class T>
void conv2d_backprop_input_kernel(const ConvGeometry& g, const T* dy, const T* w, T* dx) {
  const std::int64_t k = g.patch_size();
  const std::int64_t image_size = g.in_h * g.in_w * g.in_c;
  if (is_pointwise(g)) {
    kernels::gemm(
        kernels::GemmArgsOf<T>{.m = g.rows(), .n = k, .k = g.out_c, .a = dy, .b = w, .transpose_b = true, .c = dx});
    return;
  }
  const std::int64_t per_image = g.pixels_per_image();
  const Blocks blocks = pixel_blocks(per_image, k, g.out_c);
  // Whole images per share: col2im of overlapping windows adds into one image only.
  for_each_share(g.batch, grain_for(per_image * k * g.out_c), [&](std::int64_t n0, std::int64_t n1, auto gemm) {
    float* patches = thread_buffer<float>(blocks.rows_per_block * k);
    // Adds the windows of rows [r_begin, r_end) into `images`, which start at image first_image.
    const auto add_windows = [&](std::int64_t r_begin, std::int64_t r_end, float* images, std::int64_t first_image) {
      for (std::int64_t r0 = r_begin; k > 0 && g.out_c > 0 && r0 < r_end; r0 += blocks.rows_per_block) {
        const std::int64_t r1 = std::min(r_end, r0 + blocks.rows_per_block);
        gemm(kernels::GemmArgsOf<T, float>{
            .m = r1 - r0, .n = k, .k = g.out_c, .a = dy + r0 * g.out_c, .b = w, .transpose_b = true, .c = patches});
        col2im(g, patches, r0, r1, images, first_image);
      }
    };
    if constexpr (std::is_same_v<T, float>) {
      std::fill(dx + n0 * image_size, dx + n1 * image_size, 0.0f);
      add_windows(n0 * per_image, n1 * per_image, dx, 0);
    } else {
      // bfloat16: one image at a time sums in float32 and is rounded once.
      float* image = thread_buffer<float, 1>(image_size);
      for (std::int64_t n = n0; n < n1; ++n) {
        std::fill(image, image + image_size, 0.0f);
        add_windows(n * per_image, (n + 1) * per_image, image, n);
        kernels::cpu().round_to_bfloat16(image, image_size, dx + n * image_size);
      }
    }
  });
}

template <class T>
void conv2d_backprop_filter_kernel(const ConvGeometry& g, const T* x, const T* dy, T* dw) {
  const std::int64_t rows = g.rows();
  const std::int64_t k = g.patch_size();
  if (direct_applies(g, kMaxDirectFilterGradientChannels)) {
    kernels::convolution_backward_weights(shape_of(g), x, dy, dw);
    return;
  }
  if (is_pointwise(g) || rows == 0) {
    kernels::gemm(
        kernels::GemmArgsOf<T>{.m = k, .n = g.out_c, .k = rows, .a = x, .transpose_a = true, .b = dy, .c = dw});
    return;
  }
  const Blocks blocks = pixel_blocks(rows, k, g.out_c);
  // Each part sums its blocks into its own float32 accumulator (part 0 into a float32 dw itself);
  // the parts are then added in a fixed order, so the result does not depend on which thread ran
  // what, and a bfloat16 dw is rounded once.
  const std::int64_t parts = std::clamp<std::int64_t>(rows * k * g.out_c / kMinMacsPerTask, 1,
                                                      std::min<std::int64_t>(num_threads(), blocks.count));
  const std::int64_t filter_size = k * g.out_c;
  constexpr bool kFloat32 = std::is_same_v<T, float>;
  std::vector<float> partials(static_cast<std::size_t>((kFloat32 ? parts - 1 : parts) * filter_size));
  float* sum = nullptr;
  if constexpr (kFloat32) {
    sum = dw;
  } else {
    sum = partials.data() + (parts - 1) * filter_size;
  }
  for_each_share(parts, 1, [&](std::int64_t p0, std::int64_t p1, auto gemm) {
    T* patches = thread_buffer<T>(blocks.rows_per_block * k);
    for (std::int64_t part = p0; part < p1; ++part) {
      float* acc = part == 0 ? sum : partials.data() + (part - 1) * filter_size;
      const std::int64_t first = blocks.count * part / parts;
      const std::int64_t last = blocks.count * (part + 1) / parts;
      for (std::int64_t block = first; block < last; ++block) {
        const std::int64_t r0 = block * blocks.rows_per_block;
        const std::int64_t r1 = std::min(rows, r0 + blocks.rows_per_block);
        im2col(g, x, r0, r1, patches);
        gemm(kernels::GemmArgsOf<T, float>{.m = k,
                                           .n = g.out_c,
                                           .k = r1 - r0,
                                           .a = patches,
                                           .transpose_a = true,
                                           .b = dy + r0 * g.out_c,
                                           .c = acc,
                                           .beta = block == first ? 0.0f : 1.0f});
      }
    }
  });
  for (std::int64_t part = 1; part < parts; ++part) {
    const float* src = partials.data() + (part - 1) * filter_size;
    for (std::int64_t i = 0; i < filter_size; ++i) sum[i] += src[i];
  }
  if constexpr (!kFloat32) kernels::cpu().round_to_bfloat16(sum, filter_size, dw);
}

// Calls kernel(T{}) with T the C++ type of the float dtype every operand of a conv shares.
template <class Kernel>
void with_float_type(DType dtype, Kernel&& kernel) {
  if (dtype == DType::bfloat16) {
    kernel(bfloat16{});
  } else {
    kernel(float{});
  }
}

Conv2DOptions options_of(int stride_h, int stride_w, Padding padding) {
  return {.strides = {stride_h, stride_w}, .padding = padding};
}

class Conv2D final : public PrimitiveOf<Conv2D, OpId::conv2d> {
 public:
  Conv2D(int stride_h, int stride_w, Padding padding) : stride_h_(stride_h), stride_w_(stride_w), padding_(padding) {}
  auto fields() const { return std::tie(stride_h_, stride_w_, padding_); }
  std::string params() const override { return options_text(stride_h_, stride_w_, padding_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float_pair(name(), "input", in[0], "filter", in[1]);
    return {geometry(in[0].shape, in[1].shape).output_shape(), in[0].dtype};
  }
  bool handles_bfloat16() const override { return true; }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    with_float_type(out.dtype, [&](auto t) {
      using T = decltype(t);
      conv2d_kernel(geometry(in[0].shape, in[1].shape), in[0].as<T>(), in[1].as<T>(), out.as<T>());
    });
  }
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Conv2DOptions options = options_of(stride_h_, stride_w_, padding_);
    const Tensor& x = a.primals[0];
    const Tensor& w = a.primals[1];
    return {a.wanted[0] ? conv2d_backprop_input(a.cotangent, w, x.shape(), options) : Tensor(),
            a.wanted[1] ? conv2d_backprop_filter(x, a.cotangent, w.shape(), options) : Tensor()};
  }

 private:
  ConvGeometry geometry(const Shape& x, const Shape& w) const {
    return conv_geometry(name(), "input", x, "filter", w, stride_h_, stride_w_, padding_);
  }
  int stride_h_, stride_w_;
  Padding padding_;
};

// Inputs (dy, filter); output shaped input_shape.
class Conv2DBackpropInput final : public PrimitiveOf<Conv2DBackpropInput, OpId::conv2d_backprop_input> {
 public:
  Conv2DBackpropInput(Shape input_shape, int stride_h, int stride_w, Padding padding)
      : input_shape_(input_shape), stride_h_(stride_h), stride_w_(stride_w), padding_(padding) {}
  auto fields() const { return std::tie(input_shape_, stride_h_, stride_w_, padding_); }
  std::string params() const override {
    return "input_shape=" + input_shape_.to_string() + ", " + options_text(stride_h_, stride_w_, padding_);
  }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float_pair(name(), "dy", in[0], "filter", in[1]);
    const ConvGeometry g = geometry(in[1].shape);
    check_dy(name(), g, input_shape_, in[1].shape, in[0].shape, padding_);
    return {input_shape_, in[0].dtype};
  }
  bool handles_bfloat16() const override { return true; }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    with_float_type(out.dtype, [&](auto t) {
      using T = decltype(t);
      conv2d_backprop_input_kernel(geometry(in[1].shape), in[0].as<T>(), in[1].as<T>(), out.as<T>());
    });
  }
  // Bilinear in (dy, filter): <g, dx> = <conv2d(g, filter), dy>.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Conv2DOptions options = options_of(stride_h_, stride_w_, padding_);
    const Tensor& dy = a.primals[0];
    const Tensor& w = a.primals[1];
    return {a.wanted[0] ? conv2d(a.cotangent, w, options) : Tensor(),
            a.wanted[1] ? conv2d_backprop_filter(a.cotangent, dy, w.shape(), options) : Tensor()};
  }

 private:
  ConvGeometry geometry(const Shape& w) const {
    return conv_geometry(name(), "input_shape", input_shape_, "filter", w, stride_h_, stride_w_, padding_);
  }
  Shape input_shape_;
  int stride_h_, stride_w_;
  Padding padding_;
};

// Inputs (input, dy); output shaped filter_shape.
class Conv2DBackpropFilter final : public PrimitiveOf<Conv2DBackpropFilter, OpId::conv2d_backprop_filter> {
 public:
  Conv2DBackpropFilter(Shape filter_shape, int stride_h, int stride_w, Padding padding)
      : filter_shape_(filter_shape), stride_h_(stride_h), stride_w_(stride_w), padding_(padding) {}
  auto fields() const { return std::tie(filter_shape_, stride_h_, stride_w_, padding_); }
  std::string params() const override {
    return "filter_shape=" + filter_shape_.to_string() + ", " + options_text(stride_h_, stride_w_, padding_);
  }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    check_float_pair(name(), "input", in[0], "dy", in[1]);
    const ConvGeometry g = geometry(in[0].shape);
    check_dy(name(), g, in[0].shape, filter_shape_, in[1].shape, padding_);
    return {filter_shape_, in[0].dtype};
  }
  bool handles_bfloat16() const override { return true; }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    with_float_type(out.dtype, [&](auto t) {
      using T = decltype(t);
      conv2d_backprop_filter_kernel(geometry(in[0].shape), in[0].as<T>(), in[1].as<T>(), out.as<T>());
    });
  }
  // Bilinear in (input, dy): <g, dw> = <conv2d(input, g), dy>.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const Conv2DOptions options = options_of(stride_h_, stride_w_, padding_);
    const Tensor& x = a.primals[0];
    const Tensor& dy = a.primals[1];
    return {a.wanted[0] ? conv2d_backprop_input(dy, a.cotangent, x.shape(), options) : Tensor(),
            a.wanted[1] ? conv2d(x, a.cotangent, options) : Tensor()};
  }

 private:
  ConvGeometry geometry(const Shape& x) const {
    return conv_geometry(name(), "input", x, "filter_shape", filter_shape_, stride_h_, stride_w_, padding_);
  }
  Shape filter_shape_;
  int stride_h_, stride_w_;
  Padding padding_;
};

// Defined float operands of one dtype: float32 with bfloat16 computes in float32.
std::pair<Tensor, Tensor> prepare(std::string_view op, const char* a_name, const Tensor& a, const char* b_name,
                                  const Tensor& b) {
  if (!a.defined() || !b.defined()) {
    throw ValueError(op_message(
        op, std::string(a.defined() ? b_name : a_name) + " is an undefined tensor; pass a tensor with a value"));
  }
  check_float_pair(op, a_name, a.spec(), b_name, b.spec(), /*same_dtype=*/false);
  if (a.dtype() == b.dtype()) return {a, b};
  auto widen = [](const Tensor& t) { return t.dtype() == DType::float32 ? t : cast(t, DType::float32); };
  return {widen(a), widen(b)};
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& filter, const Conv2DOptions& options) {
  auto [x, w] = prepare("conv2d", "input", input, "filter", filter);
  check_strides("conv2d", options.strides[0], options.strides[1]);
  return detail::apply_new<Conv2D>({x, w}, options.strides[0], options.strides[1], options.padding);
}

Tensor conv2d_backprop_input(const Tensor& dy, const Tensor& filter, const Shape& input_shape,
                             const Conv2DOptions& options) {
  auto [g, w] = prepare("conv2d_backprop_input", "dy", dy, "filter", filter);
  check_strides("conv2d_backprop_input", options.strides[0], options.strides[1]);
  return detail::apply_new<Conv2DBackpropInput>({g, w}, input_shape, options.strides[0], options.strides[1],
                                                options.padding);
}

Tensor conv2d_backprop_filter(const Tensor& input, const Tensor& dy, const Shape& filter_shape,
                              const Conv2DOptions& options) {
  auto [x, g] = prepare("conv2d_backprop_filter", "input", input, "dy", dy);
  check_strides("conv2d_backprop_filter", options.strides[0], options.strides[1]);
  return detail::apply_new<Conv2DBackpropFilter>({x, g}, filter_shape, options.strides[0], options.strides[1],
                                                 options.padding);
}

}  // namespace kestrel::ops
