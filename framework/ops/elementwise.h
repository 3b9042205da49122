// Elementwise ops: arithmetic and comparisons with NumPy broadcasting, where, unary math,
// activations and cast.
//
//   Tensor y = ops::add(x, bias);                  // [32,512] + [512] broadcasts
//   Tensor z = ops::where(ops::greater(x, ops::scalar_like(x, 0)), x, ops::zeros_like(x));
//   Tensor h = ops::gelu(x, {.approximate = true});
//   Tensor w = x * 2.0 + 1.0;                       // operators take tensors and numbers
//
// Binary ops need equal dtypes; float32 with bfloat16 computes in float32. Other mixes throw
// TypeError: cast one side with ops::cast first.
#pragma once

#include "framework/core/tensor.h"

namespace kestrel::ops {

Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
/// True division for floats; for integers, rounds toward zero and throws on division by zero.
Tensor divide(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
/// a ** b (floating dtypes).
Tensor pow(const Tensor& a, const Tensor& b);

/// Comparisons return bool tensors.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);

/// x where condition (bool) is true, else y; all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);

Tensor negative(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sqrt(const Tensor& x);
/// 1 / sqrt(x).
Tensor rsqrt(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);

struct GeluOptions {
  /// false: x * Phi(x) with the exact erf (Keras's default); true: the tanh approximation.
  bool approximate = false;
};
Tensor gelu(const Tensor& x, GeluOptions options = {});
/// gelu's gradient in x: dy * gelu'(x), for x and its output gradient dy of one shape and dtype
/// (gelu's backward pass; one op where the formula written with ops would be a dozen).
Tensor gelu_backprop(const Tensor& x, const Tensor& dy, GeluOptions options = {});

/// Converts to dtype (float -> int rounds toward zero; to bool is x != 0).
Tensor cast(const Tensor& x, DType dtype);

/// x * x.
Tensor square(const Tensor& x);
/// A rank-0 tensor of like's dtype.
Tensor scalar_like(const Tensor& like, double value);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);

}  // namespace kestrel::ops

namespace kestrel {

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
// A number on either side takes the tensor's dtype.
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace kestrel
