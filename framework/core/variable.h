// Variable: a named, mutable slot holding a tensor — layer weights, optimizer slots, metric state.
//
//   Variable w("dense/kernel", initializers::glorot_uniform({784, 512}));
//   Tensor y = ops::matmul(x, w.value());     // a trainable variable is watched by GradientTape
//   w.assign(ops::subtract(w.value(), step)); // same shape and dtype, or ShapeError/TypeError
//
// Variables are handles: copies share one slot, so a weight used by two layers (tied input and
// output embeddings) is one variable, and is_same() tells.
#pragma once

#include <memory>
#include <string>

#include "framework/core/tensor.h"

namespace kestrel {

namespace detail {
struct VariableImpl;
}

class Variable {
 public:
  /// An undefined variable (defined() is false).
  Variable() = default;
  /// A variable named `name` (Keras style: "dense/kernel"), holding initial_value.
  Variable(std::string name, const Tensor& initial_value, bool trainable = true);

  bool defined() const { return impl_ != nullptr; }
  const std::string& name() const;
  /// The current value. For a trainable variable it requires grad, so a GradientTape records its use.
  const Tensor& value() const;
  /// Replaces the value; the new one must have the variable's shape and dtype.
  void assign(const Tensor& value) const;
  bool trainable() const;
  void set_trainable(bool trainable) const;
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }

  /// True when both handles are the same variable.
  bool is_same(const Variable& other) const { return impl_ == other.impl_; }
  const void* id() const { return impl_.get(); }

 private:
  std::shared_ptr<detail::VariableImpl> impl_;
};

}  // namespace kestrel
