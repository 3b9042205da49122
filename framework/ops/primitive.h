// Primitive: the one definition of an op.
//
// A primitive says, once, everything Kestrel needs to know about an op:
//   infer()     the output's shape and dtype from the inputs' (and rejects bad inputs),
//   eval_cpu()  the CPU kernel, over non-owning views,
//   vjp()       the vector-Jacobian product, written with the public ops in kestrel::ops,
// plus equality and a hash over its parameters, for CSE and compile-cache keys, and, for an
// elementwise op, the fused-program opcode computing it (its math is that opcode's functor).
// Eager execution, autodiff and the jit all run ops through this interface.
//
//   class Exp final : public PrimitiveOf<Exp, OpId::exp> {
//    public:
//     auto fields() const { return std::tuple<>(); }
//     TensorSpec infer(std::span<const TensorSpec> in) const override { return in[0]; }
//     void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override;
//     std::vector<Tensor> vjp(const VjpArgs& a) const override { return {a.cotangent * a.output}; }
//   };
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"
#include "framework/ops/op_list.h"

namespace kestrel {

/// What a primitive's vjp() receives.
struct VjpArgs {
  std::span<const Tensor> primals;  ///< the op's inputs
  const Tensor& output;             ///< the op's output
  const Tensor& cotangent;          ///< d(loss)/d(output)
  std::span<const bool> wanted;     ///< wanted[i]: is the gradient for input i needed?
};

class Primitive {
 public:
  virtual ~Primitive() = default;

  virtual OpId id() const = 0;
  std::string_view name() const { return op_name(id()); }
  OpKind kind() const { return op_kind(id()); }

  /// Output spec from the input specs. Throws ShapeError/TypeError naming the op on bad input.
  virtual TensorSpec infer(std::span<const TensorSpec> inputs) const = 0;
  /// Runs the kernel. Inputs have been validated by infer(); output is allocated with its spec.
  virtual void eval_cpu(std::span<const TensorView> inputs, const TensorView& output) const = 0;
  /// Gradients for each input (an undefined Tensor where not wanted or not differentiable).
  virtual std::vector<Tensor> vjp(const VjpArgs& args) const = 0;

  /// Same op with the same parameters (for CSE and cache keys).
  virtual bool equivalent(const Primitive& other) const = 0;
  virtual std::size_t hash() const = 0;
  /// Parameters as text for dumps and error messages, e.g. "axes=[1], keepdims=true".
  virtual std::string params() const { return {}; }
  /// True when the output shares input 0's data (reshape): the dispatcher skips the kernel.
  virtual bool is_view() const { return false; }
  /// False for kernels that only handle float32: the dispatcher then runs bfloat16 inputs
  /// through them in float32 and rounds the result back (bf16 storage, f32 compute).
  virtual bool handles_bfloat16() const { return false; }
  /// The fused-program instruction computing this op as its kernel does, for the jit's
  /// elementwise fusion; nullopt when there is none (the op is not fusible).
  virtual std::optional<ElementwiseOpcode> fusion_opcode() const { return std::nullopt; }
  /// True when the op's kernel reads a bfloat16 operand as its exact float32 values and computes
  /// as it would on them, its result rounded once if its dtype follows the operands': a widening
  /// cast before it, or a rounding one after it, can then fold into it (jit/passes/cast_folding.h).
  virtual bool widens_bfloat16_exactly() const { return false; }
};

namespace detail {
inline void hash_combine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
}
inline std::size_t hash_field(const Shape& s) { return hash_value(s); }
template <class T>
std::size_t hash_field(const std::vector<T>& values) {
  std::size_t h = values.size();
  for (const T& v : values) hash_combine(h, std::hash<T>{}(v));
  return h;
}
template <class T>
std::size_t hash_field(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return std::hash<std::underlying_type_t<T>>{}(static_cast<std::underlying_type_t<T>>(value));
  } else {
    return std::hash<T>{}(value);
  }
}
}  // namespace detail

/// Base for concrete primitives: supplies id(), equivalent() and hash() from the derived
/// class's `fields()`, a tuple of its parameters (std::tie(axes_, keepdims_)).
template <class Derived, OpId kId>
class PrimitiveOf : public Primitive {
 public:
  OpId id() const override { return kId; }
  bool equivalent(const Primitive& other) const override {
    if (other.id() != kId || typeid(other) != typeid(Derived)) return false;
    return self().fields() == static_cast<const Derived&>(other).fields();
  }
  std::size_t hash() const override {
    std::size_t h = static_cast<std::size_t>(kId);
    std::apply([&](const auto&... f) { (detail::hash_combine(h, detail::hash_field(f)), ...); }, self().fields());
    return h;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace kestrel
