// random::fold_in on key tensors: Key::fold_in as an op, so a compiled step can derive a new key
// from tensors it receives (the step counter, a call index) instead of from host integers.
//
// The result is bit for bit random::key_tensor(random::key_from_tensor(key).fold_in(data)): masks
// drawn from a folded key tensor equal those drawn from a key folded on the host.
#include <bit>
#include <cstdint>
#include <string>
#include <tuple>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/nn.h"
#include "framework/ops/primitive.h"

namespace kestrel {
namespace {

constexpr const char* kFoldInOp = "random_fold_in";

void check_int64_scalar(const char* input, const TensorSpec& spec, const char* made_by) {
  if (spec.dtype != DType::int64) {
    throw TypeError(op_message(
        kFoldInOp, std::string(input) + " is " + spec.to_string() + "; it must be an int64 scalar " + made_by));
  }
  if (spec.shape.rank() != 0) {
    throw ShapeError(op_message(kFoldInOp, std::string(input) + " is " + spec.to_string() +
                                               "; it must be an int64 scalar (shape []) " + made_by));
  }
}

TensorSpec check_inputs(const TensorSpec& key, const TensorSpec& data) {
  check_int64_scalar("key", key, "made by random::key_tensor(random::Key(seed))");
  check_int64_scalar("data", data, "(cast a step or index with ops::cast(x, DType::int64))");
  return key;
}

class RandomFoldIn final : public PrimitiveOf<RandomFoldIn, OpId::random_fold_in> {
 public:
  auto fields() const { return std::tuple<>(); }

  TensorSpec infer(std::span<const TensorSpec> inputs) const override { return check_inputs(inputs[0], inputs[1]); }

  void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const override {
    const random::Key key(std::bit_cast<std::uint64_t>(*inputs[0].as<std::int64_t>()));
    const auto data = std::bit_cast<std::uint64_t>(*inputs[1].as<std::int64_t>());
    *output.as<std::int64_t>() = std::bit_cast<std::int64_t>(key.fold_in(data).as_uint64());
  }

  // Keys and counters are integers: nothing to differentiate.
  std::vector<Tensor> vjp(const VjpArgs&) const override { return {Tensor(), Tensor()}; }
};

}  // namespace

namespace random {

Tensor fold_in(const Tensor& key, const Tensor& data) {
  if (!key.defined() || !data.defined()) {
    throw ValueError(op_message(kFoldInOp, std::string(key.defined() ? "data" : "key") +
                                               " is an undefined tensor; pass an int64 scalar tensor"));
  }
  check_inputs(key.spec(), data.spec());
  return detail::apply_new<RandomFoldIn>({key, data});
}

}  // namespace random
}  // namespace kestrel
