// Dropout, and the int64 key tensors that carry its randomness.
//
// Element i is kept when random::uniform_at(key, i) >= rate, so the mask is a pure function of
// (key, i): the same at any thread count, and recomputable for the backward pass from the key
// alone. The key is an input tensor, not a parameter, so a compiled step takes a new key each
// step without recompiling.
#include <bit>
#include <cmath>
#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"

namespace kestrel {
namespace {

constexpr const char* kDropoutOp = "dropout";

void check_key(const char* op, const TensorSpec& key) {
  if (key.dtype != DType::int64) {
    throw TypeError(op_message(op, "key is " + key.to_string() +
                                       "; it must be an int64 scalar made by random::key_tensor(random::Key(seed))"));
  }
  if (key.shape.rank() != 0) {
    throw ShapeError(op_message(
        op, "key is " + key.to_string() + "; it must be an int64 scalar (shape []) made by random::key_tensor"));
  }
}

TensorSpec check_inputs(const TensorSpec& x, const TensorSpec& key) {
  if (!is_floating(x.dtype)) {
    throw TypeError(op_message(kDropoutOp, "x is " + x.to_string() + "; it must be float32 or bfloat16"));
  }
  check_key(kDropoutOp, key);
  return x;
}

std::string format_rate(double rate) {
  std::ostringstream out;
  out << rate;
  return out.str();
}

class Dropout final : public PrimitiveOf<Dropout, OpId::dropout> {
 public:
  explicit Dropout(double rate) : rate_(rate) {}
  auto fields() const { return std::tie(rate_); }
  std::string params() const override { return "rate=" + format_rate(rate_); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_inputs(inputs[0], inputs[1]); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    // uniform_at(key, i) is (24 bits) * 2^-24, so uniform_at >= rate exactly when those bits reach
    // ceil(rate * 2^24) (a product exact in double).
    const auto threshold = static_cast<std::uint32_t>(std::ceil(rate_ * 16777216.0));
    kernels::cpu().dropout(inputs[0].as<float>(), output.as<float>(), inputs[0].numel(),
                           std::bit_cast<std::uint64_t>(*inputs[1].as<std::int64_t>()), threshold,
                           static_cast<float>(1.0 / (1.0 - rate_)));
  }

  // Linear in x with a fixed mask: the gradient is the same dropout (same key) of the cotangent.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0]) return {Tensor(), Tensor()};
    return {ops::dropout(a.cotangent, rate_, a.primals[1]), Tensor()};
  }

 private:
  double rate_;
};

}  // namespace

namespace ops {

Tensor dropout(const Tensor& x, double rate, const Tensor& key) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    throw ValueError(op_message(
        kDropoutOp, "rate is " + format_rate(rate) + "; it must be in [0, 1): the fraction of elements set to zero"));
  }
  if (!x.defined() || !key.defined()) {
    throw ValueError(op_message(
        kDropoutOp, std::string(x.defined() ? "key" : "x") + " is an undefined tensor; pass a tensor with a value"));
  }
  check_inputs(x.spec(), key.spec());
  if (rate == 0.0) return x;  // nothing is dropped and the scale is 1
  return detail::apply_new<Dropout>({x, key}, rate);
}

}  // namespace ops

namespace random {

Tensor key_tensor(const Key& key) {
  return Tensor::from_vector<std::int64_t>({std::bit_cast<std::int64_t>(key.as_uint64())}, Shape{});
}

Key key_from_tensor(const Tensor& key) {
  if (!key.defined()) {
    throw ValueError(
        op_message("random.key_from_tensor", "key is an undefined tensor; pass one from random::key_tensor"));
  }
  check_key("random.key_from_tensor", key.spec());
  return Key(std::bit_cast<std::uint64_t>(*key.data<std::int64_t>()));
}

}  // namespace random
}  // namespace kestrel
