// Op table entries for conv2d, its two gradients and the five pooling ops, NHWC. References are
// naive loops in double over every window, with TensorFlow's padding rule written out again.
#include <algorithm>
#include <limits>

#include "framework/ops/conv.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

using ops::Padding;

// One spatial axis: output length and the padding before the first window.
struct Axis {
  std::int64_t out, pad;
};
Axis axis(std::int64_t in, std::int64_t window, std::int64_t stride, Padding padding) {
  if (padding == Padding::valid) return {(in - window) / stride + 1, 0};
  const std::int64_t out = (in + stride - 1) / stride;
  return {out, std::max<std::int64_t>((out - 1) * stride + window - in, 0) / 2};
}

std::size_t at4(const Shape& s, std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return static_cast<std::size_t>(((a * s[1] + b) * s[2] + c) * s[3] + d);
}

// A double-precision naive conv2d of x with w; the loops of the two gradients are written as
// their own scatters below rather than derived from this one.
struct ConvRef {
  Shape x, w;
  std::int64_t sh, sw;
  Padding padding;
  Axis rows() const { return axis(x[1], w[0], sh, padding); }
  Axis cols() const { return axis(x[2], w[1], sw, padding); }
  Shape y() const { return {x[0], rows().out, cols().out, w[3]}; }

  // Calls fn(x index, w index, y index) for every multiply-add of the convolution.
  template <class Fn>
  void for_each_tap(Fn&& fn) const {
    const Shape out = y();
    for (std::int64_t n = 0; n < x[0]; ++n)
      for (std::int64_t i = 0; i < out[1]; ++i)
        for (std::int64_t j = 0; j < out[2]; ++j)
          for (std::int64_t di = 0; di < w[0]; ++di)
            for (std::int64_t dj = 0; dj < w[1]; ++dj) {
              const std::int64_t yy = i * sh - rows().pad + di;
              const std::int64_t xx = j * sw - cols().pad + dj;
              if (yy < 0 || yy >= x[1] || xx < 0 || xx >= x[2]) continue;
              for (std::int64_t c = 0; c < x[3]; ++c)
                for (std::int64_t o = 0; o < w[3]; ++o)
                  fn(at4(x, n, yy, xx, c), at4(w, di, dj, c, o), at4(out, n, i, j, o));
            }
  }
};

Tensor reference_conv2d(const ConvRef& r, const Tensor& x, const Tensor& w) {
  std::vector<double> vx = x.to_vector<double>(), vw = w.to_vector<double>();
  std::vector<double> y(static_cast<std::size_t>(r.y().numel()), 0.0);
  r.for_each_tap([&](std::size_t ix, std::size_t iw, std::size_t iy) { y[iy] += vx[ix] * vw[iw]; });
  return float_tensor(y, r.y());
}

Tensor reference_backprop_input(const ConvRef& r, const Tensor& dy, const Tensor& w) {
  std::vector<double> vdy = dy.to_vector<double>(), vw = w.to_vector<double>();
  std::vector<double> dx(static_cast<std::size_t>(r.x.numel()), 0.0);
  r.for_each_tap([&](std::size_t ix, std::size_t iw, std::size_t iy) { dx[ix] += vdy[iy] * vw[iw]; });
  return float_tensor(dx, r.x);
}

Tensor reference_backprop_filter(const ConvRef& r, const Tensor& x, const Tensor& dy) {
  std::vector<double> vx = x.to_vector<double>(), vdy = dy.to_vector<double>();
  std::vector<double> dw(static_cast<std::size_t>(r.w.numel()), 0.0);
  r.for_each_tap([&](std::size_t ix, std::size_t iw, std::size_t iy) { dw[iw] += vx[ix] * vdy[iy]; });
  return float_tensor(dw, r.w);
}

OpCase conv_case(OpId op, std::string label, ConvRef r) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  const ops::Conv2DOptions o{.strides = {static_cast<int>(r.sh), static_cast<int>(r.sw)}, .padding = r.padding};
  switch (op) {
    case OpId::conv2d:
      c.make_inputs = [r] { return Inputs{uniform_tensor(r.x, 21), uniform_tensor(r.w, 22)}; };
      c.run = [o](const Inputs& in) { return ops::conv2d(in[0], in[1], o); };
      c.reference = [r](const Inputs& in) { return reference_conv2d(r, in[0], in[1]); };
      break;
    case OpId::conv2d_backprop_input:
      c.make_inputs = [r] { return Inputs{uniform_tensor(r.y(), 23), uniform_tensor(r.w, 24)}; };
      c.run = [o, r](const Inputs& in) { return ops::conv2d_backprop_input(in[0], in[1], r.x, o); };
      c.reference = [r](const Inputs& in) { return reference_backprop_input(r, in[0], in[1]); };
      break;
    default:
      c.make_inputs = [r] { return Inputs{uniform_tensor(r.x, 25), uniform_tensor(r.y(), 26)}; };
      c.run = [o, r](const Inputs& in) { return ops::conv2d_backprop_filter(in[0], in[1], r.w, o); };
      c.reference = [r](const Inputs& in) { return reference_backprop_filter(r, in[0], in[1]); };
      break;
  }
  return c;
}

// Pooling reference: the real elements of each window, in row-major scan order.
struct PoolRef {
  Shape x;
  std::int64_t kh, kw, sh, sw;
  Padding padding;
  Axis rows() const { return axis(x[1], kh, sh, padding); }
  Axis cols() const { return axis(x[2], kw, sw, padding); }
  Shape y() const { return {x[0], rows().out, cols().out, x[3]}; }
  ops::Pool2DOptions options() const {
    return {.pool_size = {static_cast<int>(kh), static_cast<int>(kw)},
            .strides = {static_cast<int>(sh), static_cast<int>(sw)},
            .padding = padding};
  }

  // fn(y index, x indices of the window's real elements).
  template <class Fn>
  void for_each_window(Fn&& fn) const {
    const Shape out = y();
    for (std::int64_t n = 0; n < out[0]; ++n)
      for (std::int64_t i = 0; i < out[1]; ++i)
        for (std::int64_t j = 0; j < out[2]; ++j)
          for (std::int64_t c = 0; c < out[3]; ++c) {
            std::vector<std::size_t> window;
            for (std::int64_t di = 0; di < kh; ++di)
              for (std::int64_t dj = 0; dj < kw; ++dj) {
                const std::int64_t yy = i * sh - rows().pad + di;
                const std::int64_t xx = j * sw - cols().pad + dj;
                if (yy >= 0 && yy < x[1] && xx >= 0 && xx < x[2]) window.push_back(at4(x, n, yy, xx, c));
              }
            fn(at4(out, n, i, j, c), window);
          }
  }
};

// The index of the window's first maximum.
std::size_t first_max(const std::vector<double>& v, const std::vector<std::size_t>& window) {
  std::size_t best = window[0];
  for (std::size_t idx : window) {
    if (v[idx] > v[best]) best = idx;
  }
  return best;
}

// Distinct values at least 2/numel apart, so no finite-difference step swaps two maxima.
Tensor distinct_tensor(const Shape& shape) {
  const std::int64_t n = shape.numel();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = -1.0 + 2.0 * static_cast<double>((i * 37) % n) / n;
  return float_tensor(v, shape);
}

OpCase pool_case(OpId op, std::string label, PoolRef r) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  const ops::Pool2DOptions o = r.options();
  switch (op) {
    case OpId::max_pool2d:
      c.make_inputs = [r] { return Inputs{distinct_tensor(r.x)}; };
      c.run = [o](const Inputs& in) { return ops::max_pool2d(in[0], o); };
      c.reference = [r](const Inputs& in) {
        std::vector<double> v = in[0].to_vector<double>(), y(static_cast<std::size_t>(r.y().numel()));
        r.for_each_window([&](std::size_t iy, const std::vector<std::size_t>& w) { y[iy] = v[first_max(v, w)]; });
        return float_tensor(y, r.y());
      };
      break;
    case OpId::max_pool2d_backprop:
      c.make_inputs = [r] { return Inputs{distinct_tensor(r.x), uniform_tensor(r.y(), 31)}; };
      c.run = [o](const Inputs& in) { return ops::max_pool2d_backprop(in[0], in[1], o); };
      c.reference = [r](const Inputs& in) {
        std::vector<double> v = in[0].to_vector<double>(), dy = in[1].to_vector<double>(), dx(v.size(), 0.0);
        r.for_each_window([&](std::size_t iy, const std::vector<std::size_t>& w) { dx[first_max(v, w)] += dy[iy]; });
        return float_tensor(dx, r.x);
      };
      break;
    case OpId::max_pool2d_select:
      c.make_inputs = [r] { return Inputs{distinct_tensor(r.x), uniform_tensor(r.x, 32)}; };
      c.run = [o](const Inputs& in) { return ops::max_pool2d_select(in[0], in[1], o); };
      c.reference = [r](const Inputs& in) {
        std::vector<double> v = in[0].to_vector<double>(), values = in[1].to_vector<double>();
        std::vector<double> y(static_cast<std::size_t>(r.y().numel()));
        r.for_each_window([&](std::size_t iy, const std::vector<std::size_t>& w) { y[iy] = values[first_max(v, w)]; });
        return float_tensor(y, r.y());
      };
      break;
    case OpId::avg_pool2d:
      c.make_inputs = [r] { return Inputs{uniform_tensor(r.x, 33)}; };
      c.run = [o](const Inputs& in) { return ops::avg_pool2d(in[0], o); };
      c.reference = [r](const Inputs& in) {
        std::vector<double> v = in[0].to_vector<double>(), y(static_cast<std::size_t>(r.y().numel()));
        r.for_each_window([&](std::size_t iy, const std::vector<std::size_t>& w) {
          for (std::size_t idx : w) y[iy] += v[idx] / static_cast<double>(w.size());
        });
        return float_tensor(y, r.y());
      };
      break;
    default:
      c.make_inputs = [r] { return Inputs{uniform_tensor(r.y(), 34)}; };
      c.run = [o, r](const Inputs& in) { return ops::avg_pool2d_backprop(in[0], r.x, o); };
      c.reference = [r](const Inputs& in) {
        std::vector<double> dy = in[0].to_vector<double>(), dx(static_cast<std::size_t>(r.x.numel()), 0.0);
        r.for_each_window([&](std::size_t iy, const std::vector<std::size_t>& w) {
          for (std::size_t idx : w) dx[idx] += dy[iy] / static_cast<double>(w.size());
        });
        return float_tensor(dx, r.x);
      };
      break;
  }
  return c;
}

std::vector<OpCase> conv_cases() {
  std::vector<OpCase> cases;
  const ConvRef valid{{2, 5, 5, 3}, {3, 3, 3, 4}, 1, 1, Padding::valid};
  const ConvRef same_stride2{{1, 6, 7, 2}, {3, 2, 2, 3}, 2, 2, Padding::same};  // odd padding: more after
  const ConvRef valid_stride2{{2, 7, 6, 2}, {3, 3, 2, 2}, 2, 1, Padding::valid};
  const ConvRef pointwise{{2, 3, 3, 4}, {1, 1, 4, 3}, 1, 1, Padding::same};
  // Few input channels run on oneDNN's direct convolution, many on im2col + gemm (conv.cpp's
  // direct_applies); the cases above have few. A valid window that leaves the last row and column
  // unread (padding after them of -1), and 20 channels for im2col.
  const ConvRef unread_edge{{2, 6, 6, 2}, {3, 3, 2, 3}, 2, 2, Padding::valid};
  const ConvRef many_channels{{2, 5, 6, 20}, {3, 3, 20, 3}, 1, 2, Padding::same};
  cases.push_back(conv_case(OpId::conv2d, "conv2d_valid", valid));
  cases.push_back(conv_case(OpId::conv2d, "conv2d_same_stride2", same_stride2));
  cases.push_back(conv_case(OpId::conv2d, "conv2d_valid_stride2x1", valid_stride2));
  cases.push_back(conv_case(OpId::conv2d, "conv2d_pointwise", pointwise));
  cases.push_back(conv_case(OpId::conv2d, "conv2d_valid_stride2_unread_edge", unread_edge));
  cases.push_back(conv_case(OpId::conv2d, "conv2d_many_channels", many_channels));
  cases.push_back(conv_case(OpId::conv2d_backprop_input, "conv2d_backprop_input_valid", valid));
  cases.push_back(conv_case(OpId::conv2d_backprop_input, "conv2d_backprop_input_same_stride2", same_stride2));
  cases.push_back(conv_case(OpId::conv2d_backprop_input, "conv2d_backprop_input_valid_stride2x1", valid_stride2));
  cases.push_back(conv_case(OpId::conv2d_backprop_input, "conv2d_backprop_input_many_channels", many_channels));
  cases.push_back(conv_case(OpId::conv2d_backprop_filter, "conv2d_backprop_filter_valid", valid));
  cases.push_back(conv_case(OpId::conv2d_backprop_filter, "conv2d_backprop_filter_same_stride2", same_stride2));
  cases.push_back(conv_case(OpId::conv2d_backprop_filter, "conv2d_backprop_filter_pointwise", pointwise));
  cases.push_back(
      conv_case(OpId::conv2d_backprop_filter, "conv2d_backprop_filter_valid_stride2_unread_edge", unread_edge));
  cases.push_back(conv_case(OpId::conv2d_backprop_filter, "conv2d_backprop_filter_many_channels", many_channels));

  // Many pixel blocks over both threads, for the forward pass and each gradient's kernel.
  const ConvRef large{{6, 24, 24, 8}, {3, 3, 8, 16}, 1, 1, Padding::same};
  for (OpId op : {OpId::conv2d, OpId::conv2d_backprop_input, OpId::conv2d_backprop_filter}) {
    OpCase c = conv_case(op, std::string(op_name(op)) + "_large_blocked", large);
    c.tolerance = 1e-4;
    c.no_gradient_because = "size: exercises the blocked, threaded kernel; gradients are checked on the small cases";
    cases.push_back(std::move(c));
  }
  // The direct convolution's images split into runs over both threads.
  const ConvRef large_direct{{16, 28, 28, 3}, {3, 3, 3, 16}, 1, 1, Padding::valid};
  for (OpId op : {OpId::conv2d, OpId::conv2d_backprop_filter}) {
    OpCase c = conv_case(op, std::string(op_name(op)) + "_large_direct", large_direct);
    c.tolerance = 1e-4;
    c.no_gradient_because = "size: exercises the direct kernel's runs; gradients are checked on the small cases";
    cases.push_back(std::move(c));
  }

  const PoolRef two_by_two{{2, 4, 6, 3}, 2, 2, 2, 2, Padding::valid};
  const PoolRef overlap_same{{1, 5, 5, 2}, 3, 3, 2, 2, Padding::same};
  const PoolRef overlap_valid{{2, 5, 4, 2}, 3, 2, 1, 1, Padding::valid};
  cases.push_back(pool_case(OpId::max_pool2d, "max_pool2d_valid_2x2", two_by_two));
  cases.push_back(pool_case(OpId::max_pool2d, "max_pool2d_same_overlapping", overlap_same));
  cases.push_back(pool_case(OpId::max_pool2d, "max_pool2d_valid_overlapping", overlap_valid));
  cases.push_back(pool_case(OpId::max_pool2d_backprop, "max_pool2d_backprop_valid_overlapping", overlap_valid));
  cases.push_back(pool_case(OpId::max_pool2d_backprop, "max_pool2d_backprop_same_overlapping", overlap_same));
  cases.push_back(pool_case(OpId::max_pool2d_select, "max_pool2d_select_same_overlapping", overlap_same));
  cases.push_back(pool_case(OpId::max_pool2d_select, "max_pool2d_select_valid_2x2", two_by_two));
  cases.push_back(pool_case(OpId::avg_pool2d, "avg_pool2d_valid_2x2", two_by_two));
  cases.push_back(pool_case(OpId::avg_pool2d, "avg_pool2d_same_overlapping", overlap_same));
  cases.push_back(pool_case(OpId::avg_pool2d_backprop, "avg_pool2d_backprop_same_overlapping", overlap_same));
  cases.push_back(pool_case(OpId::avg_pool2d_backprop, "avg_pool2d_backprop_valid_overlapping", overlap_valid));

  // Ties: every element of a window equal, so the first one in scan order must take the gradient.
  OpCase ties = pool_case(OpId::max_pool2d_backprop, "max_pool2d_backprop_ties", overlap_valid);
  ties.make_inputs = [r = overlap_valid] {
    return Inputs{
        tensor_from_index_fn(r.x, [](const std::vector<std::int64_t>& i) { return static_cast<double>(i[3]); }),
        uniform_tensor(r.y(), 35)};
  };
  ties.no_gradient_because = "ties: the maximum is not differentiable where elements are equal";
  cases.push_back(std::move(ties));
  return cases;
}

}  // namespace

KESTREL_REGISTER_OP_CASES(conv_cases);

}  // namespace kestrel::testing
