#include "framework/core/variable.h"

#include <unordered_set>

#include "framework/core/error.h"

namespace kestrel {
namespace detail {
struct VariableImpl {
  std::string name;
  Tensor value;
  bool trainable;
  const void* owner;
};
}  // namespace detail

namespace {
thread_local const void* current_owner = nullptr;

// The stored value is a fresh leaf sharing the data: history from the op that computed it is
// dropped, so the variable never keeps a whole step's graph alive. While a jit trace runs, the
// value is symbolic (a graph value, no data), and the leaf stands for the same graph value:
// that is how a traced step reads its state as inputs and writes its new state as outputs.
Tensor as_leaf(const Tensor& t, bool trainable) {
  Tensor leaf;
  if (t.is_symbolic()) {
    auto impl = std::make_shared<detail::TensorImpl>();
    impl->spec = t.spec();
    impl->symbolic = t.impl().symbolic;
    leaf = Tensor(std::move(impl));
  } else {
    leaf = Tensor::from_buffer(t.buffer(), t.shape(), t.dtype());
  }
  leaf.set_requires_grad(trainable && is_floating(t.dtype()));
  return leaf;
}
}  // namespace

Variable::Variable(std::string name, const Tensor& initial_value, bool trainable) {
  if (!initial_value.defined()) {
    throw ValueError("Variable '" + name + "': the initial value is an undefined tensor");
  }
  impl_ = std::make_shared<detail::VariableImpl>(
      detail::VariableImpl{std::move(name), as_leaf(initial_value, trainable), trainable, current_owner});
}

const void* Variable::owner() const { return impl_->owner; }

std::vector<Variable> unique_variables(const std::vector<Variable>& variables) {
  std::vector<Variable> out;
  std::unordered_set<const void*> seen;
  for (const Variable& v : variables) {
    if (seen.insert(v.id()).second) out.push_back(v);
  }
  return out;
}

VariableOwnerScope::VariableOwnerScope(const void* owner) : previous_(current_owner) { current_owner = owner; }
VariableOwnerScope::~VariableOwnerScope() { current_owner = previous_; }

const std::string& Variable::name() const { return impl_->name; }
const Tensor& Variable::value() const { return impl_->value; }
bool Variable::trainable() const { return impl_->trainable; }

void Variable::set_trainable(bool trainable) const {
  impl_->trainable = trainable;
  impl_->value.set_requires_grad(trainable && is_floating(impl_->value.dtype()));
}

void Variable::assign(const Tensor& value) const {
  const Tensor& current = impl_->value;
  if (!value.defined()) throw ValueError("Variable '" + impl_->name + "': cannot assign an undefined tensor");
  if (value.shape() != current.shape()) {
    throw ShapeError("Variable '" + impl_->name + "' is " + current.spec().to_string() +
                     "; cannot assign a value of shape " + value.shape().to_string());
  }
  if (value.dtype() != current.dtype()) {
    throw TypeError("Variable '" + impl_->name + "' is " + current.spec().to_string() + "; cannot assign a " +
                    value.spec().to_string() + " value (cast it with ops::cast)");
  }
  impl_->value = as_leaf(value, impl_->trainable);
}

}  // namespace kestrel
