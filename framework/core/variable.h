// Variable: a named, mutable slot holding a tensor — layer weights, optimizer slots, metric state.
//
//   Variable w("dense/kernel", initializers::glorot_uniform({784, 512}));
//   Tensor y = ops::matmul(x, w.value());     // a trainable variable is watched by GradientTape
//   w.assign(ops::subtract(w.value(), step)); // same shape and dtype, or ShapeError/TypeError
//
// Variables are handles: copies share one slot, so a weight used by two layers (tied input and
// output embeddings) is one variable, and is_same() tells. A weight a layer created on its own can
// be tied to another after the fact (tie_to): every handle of it then reads and writes the other's
// slot. A variable remembers the distribution strategy it was created under (owner()), as Keras's do.
//
// Reading a floating variable inside a layer whose precision policy computes in another dtype
// (mixed_bfloat16: float32 variables, bfloat16 math) gives its value cast to that dtype, as
// Keras's AutocastScope does; the stored value, its dtype and its gradient stay float32. Variables
// made with autocast = false (layer normalization's gain and offset) are always read as stored.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

namespace detail {
struct VariableImpl;
}

class Variable {
 public:
  /// An undefined variable (defined() is false).
  Variable() = default;
  /// A variable named `name` (Keras style: "dense/kernel"), holding initial_value. autocast = false
  /// keeps it out of the read cast described above.
  Variable(std::string name, const Tensor& initial_value, bool trainable = true, bool autocast = true);

  bool defined() const { return impl_ != nullptr; }
  const std::string& name() const;
  /// The current value. For a trainable variable it requires grad, so a GradientTape records its use.
  /// Under a read cast (detail::ReadCast, installed by a layer's precision policy) it is the stored
  /// value cast to the compute dtype: the cast is recorded, so gradients reach the stored value.
  Tensor value() const;
  /// The stored value, never cast: for optimizers, checkpoints and anything that writes it back.
  const Tensor& stored_value() const;
  /// Replaces the value; the new one must have the variable's shape and dtype.
  void assign(const Tensor& value) const;
  bool trainable() const;
  void set_trainable(bool trainable) const;
  const Shape& shape() const { return stored_value().shape(); }
  /// The stored dtype (Keras's variable.dtype), whatever a read cast gives.
  DType dtype() const { return stored_value().dtype(); }
  /// False when reads are never cast (see above).
  bool autocast() const;

  /// Makes this variable `source`, as Hugging Face's tie_weights does: from now on every handle
  /// of it (in every layer that holds one) reads, writes and trains source's slot, and its own
  /// value is dropped. It keeps its name. Tie before the optimizer makes its slots, so the pair
  /// gets one set. The shapes and dtypes must match (ShapeError / TypeError naming both).
  void tie_to(const Variable& source) const;
  /// True when both handles are the same variable (tied ones included).
  bool is_same(const Variable& other) const { return id() == other.id(); }
  /// The identity of the slot the variable reads and writes: tied variables share it.
  const void* id() const;
  /// True when tie_to made this variable another's.
  bool is_tied() const;
  /// What the variable was created under: the distribution strategy whose scope was active
  /// (VariableOwnerScope), or null. framework/distribute gives it its type.
  const void* owner() const;

 private:
  std::shared_ptr<detail::VariableImpl> impl_;
};

namespace detail {

/// Told of every assignment on its thread while installed, before the value changes: a jit trace
/// finds the variables a step assigns beyond the state it was given (a second optimizer's slots).
class AssignObserver {
 public:
  virtual void before_assign(const Variable& variable) = 0;

 protected:
  ~AssignObserver() = default;
};

/// The observer installed on this thread, or null.
AssignObserver* assign_observer();
/// Installs `observer` (null: none) on this thread.
void set_assign_observer(AssignObserver* observer);

/// Applied to every read of a floating, autocast variable on its thread while installed: a layer
/// computing in another dtype than its variables' installs one (framework/layers/autocast_scope.h),
/// which casts through the ops, a layer above this one.
class ReadCast {
 public:
  /// The value a read returns; `stored` is the variable's floating stored value.
  virtual Tensor cast(const Tensor& stored) const = 0;

 protected:
  ~ReadCast() = default;
};

/// The read cast installed on this thread, or null.
const ReadCast* read_cast();
/// Installs `cast` (null: none) on this thread.
void set_read_cast(const ReadCast* cast);

}  // namespace detail

/// Each variable once (by id()), in first-seen order: a tied weight listed by two layers is one variable.
std::vector<Variable> unique_variables(const std::vector<Variable>& variables);

/// Variables created on this thread during the scope's lifetime get `owner` (Variable::owner).
/// Scopes nest; the outer owner returns when one ends. A distribution strategy's scope holds one.
class VariableOwnerScope {
 public:
  explicit VariableOwnerScope(const void* owner);
  ~VariableOwnerScope();
  VariableOwnerScope(const VariableOwnerScope&) = delete;
  VariableOwnerScope& operator=(const VariableOwnerScope&) = delete;

 private:
  const void* previous_;
};

}  // namespace kestrel
