// Handle<Base>: a shared, polymorphic value, so options can take any subclass by value.
//
//   struct CompileOptions { Handle<optimizers::Optimizer> optimizer; ... };
//   model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-3})});   // moved into a handle
//   auto adam = std::make_shared<optimizers::Adam>();                        // or shared, to keep
//   model.compile({.optimizer = adam});                                       // a reference to it
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace kestrel {

template <class Base>
class Handle {
 public:
  Handle() = default;
  /// Takes a subclass by value (copied or moved into shared storage).
  template <class T, std::enable_if_t<
                         std::is_base_of_v<Base, std::decay_t<T>> && !std::is_same_v<std::decay_t<T>, Handle>, int> = 0>
  Handle(T&& value) : ptr_(std::make_shared<std::decay_t<T>>(std::forward<T>(value))) {}  // NOLINT
  /// Shares an existing object.
  template <class T, std::enable_if_t<std::is_base_of_v<Base, T>, int> = 0>
  Handle(std::shared_ptr<T> ptr) : ptr_(std::move(ptr)) {}  // NOLINT

  explicit operator bool() const { return ptr_ != nullptr; }
  Base* get() const { return ptr_.get(); }
  Base* operator->() const { return ptr_.get(); }
  Base& operator*() const { return *ptr_; }
  const std::shared_ptr<Base>& shared() const { return ptr_; }

 private:
  std::shared_ptr<Base> ptr_;
};

}  // namespace kestrel
