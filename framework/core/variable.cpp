#include "framework/core/variable.h"

#include <unordered_set>

#include "framework/core/error.h"

namespace kestrel {
namespace detail {
struct VariableImpl {
  std::string name;
  Tensor value;
  bool trainable;
  bool autocast;
  const void* owner;
  std::shared_ptr<VariableImpl> tied_to;  // set by tie_to: the slot this variable reads and writes
};
}  // namespace detail

namespace {
thread_local const void* current_owner = nullptr;
thread_local detail::AssignObserver* current_assign_observer = nullptr;
thread_local const detail::ReadCast* current_read_cast = nullptr;

// The slot a variable stands for: its own, or, once tied, the end of its chain of ties.
const std::shared_ptr<detail::VariableImpl>& slot_of(const std::shared_ptr<detail::VariableImpl>& impl) {
  const std::shared_ptr<detail::VariableImpl>* at = &impl;
  while ((*at)->tied_to) at = &(*at)->tied_to;
  return *at;
}

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

Variable::Variable(std::string name, const Tensor& initial_value, bool trainable, bool autocast) {
  if (!initial_value.defined()) {
    throw ValueError("Variable '" + name + "': the initial value is an undefined tensor");
  }
  impl_ = std::make_shared<detail::VariableImpl>(detail::VariableImpl{
      std::move(name), as_leaf(initial_value, trainable), trainable, autocast, current_owner, nullptr});
}

const void* Variable::owner() const { return slot_of(impl_)->owner; }
const void* Variable::id() const { return impl_ ? slot_of(impl_).get() : nullptr; }
bool Variable::is_tied() const { return impl_ && impl_->tied_to != nullptr; }

void Variable::tie_to(const Variable& source) const {
  if (!defined() || !source.defined()) throw ValueError("Variable::tie_to: both variables must be defined");
  const std::shared_ptr<detail::VariableImpl>& target = slot_of(source.impl_);
  if (target == slot_of(impl_)) return;  // already one variable
  const Tensor& mine = stored_value();
  const std::string what = "cannot tie variable '" + name() + "' (" + mine.spec().to_string() + ") to '" +
                           source.name() + "' (" + target->value.spec().to_string() + "): ";
  if (mine.shape() != target->value.shape()) throw ShapeError(what + "the shapes differ");
  if (mine.dtype() != target->value.dtype()) throw TypeError(what + "the dtypes differ");
  // Re-pointing this handle's own slot (not the end of its chain) keeps every earlier tie to it.
  impl_->tied_to = target;
}

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
const Tensor& Variable::stored_value() const { return slot_of(impl_)->value; }
bool Variable::autocast() const { return slot_of(impl_)->autocast; }

Tensor Variable::value() const {
  const detail::VariableImpl& slot = *slot_of(impl_);
  if (current_read_cast == nullptr || !slot.autocast || !is_floating(slot.value.dtype())) return slot.value;
  return current_read_cast->cast(slot.value);
}
bool Variable::trainable() const { return slot_of(impl_)->trainable; }

void Variable::set_trainable(bool trainable) const {
  detail::VariableImpl& slot = *slot_of(impl_);
  slot.trainable = trainable;
  slot.value.set_requires_grad(trainable && is_floating(slot.value.dtype()));
}

void Variable::assign(const Tensor& value) const {
  detail::VariableImpl& slot = *slot_of(impl_);
  const Tensor& current = slot.value;
  if (!value.defined()) throw ValueError("Variable '" + impl_->name + "': cannot assign an undefined tensor");
  if (value.shape() != current.shape()) {
    throw ShapeError("Variable '" + impl_->name + "' is " + current.spec().to_string() +
                     "; cannot assign a value of shape " + value.shape().to_string());
  }
  if (value.dtype() != current.dtype()) {
    throw TypeError("Variable '" + impl_->name + "' is " + current.spec().to_string() + "; cannot assign a " +
                    value.spec().to_string() + " value (cast it with ops::cast)");
  }
  if (current_assign_observer != nullptr) current_assign_observer->before_assign(*this);
  slot.value = as_leaf(value, slot.trainable);
}

namespace detail {
AssignObserver* assign_observer() { return current_assign_observer; }
void set_assign_observer(AssignObserver* observer) { current_assign_observer = observer; }
const ReadCast* read_cast() { return current_read_cast; }
void set_read_cast(const ReadCast* cast) { current_read_cast = cast; }
}  // namespace detail

}  // namespace kestrel
