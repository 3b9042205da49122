// Tensor: a handle to an immutable, shaped, typed block of data.
//
//   Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   x.shape();              // [2,3]
//   x.dtype();              // DType::float32
//   x.to_vector<float>();   // {1, 2, 3, 4, 5, 6}
//   Tensor y = x;           // copies the handle, not the data
//
// Ops never write into their inputs, so sharing data between handles is safe. A tensor
// made by an op under a GradientTape also remembers the op and its inputs for the backward pass.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/core/buffer.h"
#include "framework/core/dtype.h"
#include "framework/core/shape.h"

namespace kestrel {

class Primitive;
class Tensor;
namespace functional {
struct Node;
}

/// Shape and dtype without data: what shape inference works on.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::float32;
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
  /// "float32[32,784]"
  std::string to_string() const;
};

/// A non-owning view that kernels read and write. Kernels see only views, so eager
/// execution and a compiled program can bind them to any memory.
struct TensorView {
  void* data = nullptr;
  Shape shape;
  DType dtype = DType::float32;

  std::int64_t numel() const { return shape.numel(); }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

namespace detail {
/// The autodiff record of the op that produced a tensor.
struct GradRecord {
  std::shared_ptr<const Primitive> primitive;
  std::vector<Tensor> inputs;
};

/// What a symbolic tensor knows: one made while a jit trace runs has a shape and a dtype but no
/// data, and stands for a value of the traced graph. A Keras tensor of the Functional API
/// (layers/keras_tensor.h) belongs to no trace: it stands for the output of a layer call instead.
struct SymbolicValue {
  const void* trace = nullptr;  ///< the trace it belongs to (null for a Keras tensor)
  std::int64_t id = -1;         ///< its value in that trace's graph
  std::string origin;           ///< "op 'greater' in layer 'dense_1' (Dense)", for error messages
  std::shared_ptr<const functional::Node> keras_history;  ///< the layer call that made a Keras tensor
};

struct TensorImpl {
  TensorSpec spec;
  std::shared_ptr<Buffer> buffer;
  bool requires_grad = false;
  std::unique_ptr<GradRecord> grad_record;        // set when an op ran under a recording GradientTape
  std::shared_ptr<const SymbolicValue> symbolic;  // set for tensors made while tracing (no buffer)
};
}  // namespace detail

class Tensor {
 public:
  /// An undefined tensor (defined() is false): "no value", e.g. no gradient for an integer input.
  Tensor() = default;

  /// Uninitialized storage.
  static Tensor empty(const Shape& shape, DType dtype = DType::float32);
  /// `reused`'s buffer when it has exactly the bytes this shape and dtype need and nothing else
  /// holds it (is_sole_owner: last step's buffer, given back, perhaps as a reshape of what is
  /// wanted now), else empty(shape, dtype): how a steady step allocates nothing.
  static Tensor empty_or_reused(Tensor&& reused, const Shape& shape, DType dtype);
  static Tensor zeros(const Shape& shape, DType dtype = DType::float32);
  static Tensor ones(const Shape& shape, DType dtype = DType::float32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::float32);
  /// A rank-0 tensor.
  static Tensor scalar(double value, DType dtype = DType::float32);
  /// Copies values into a new tensor; throws ShapeError when the count does not match the shape.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  /// Wraps an existing buffer (shared, not copied).
  static Tensor from_buffer(std::shared_ptr<Buffer> buffer, const Shape& shape, DType dtype);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl_->spec.shape; }
  DType dtype() const { return impl_->spec.dtype; }
  const TensorSpec& spec() const { return impl_->spec; }
  int rank() const { return shape().rank(); }
  std::int64_t numel() const { return shape().numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * size_of(dtype()); }

  /// Typed pointer to the data; throws TypeError when T does not match dtype(), and JitError for
  /// a symbolic tensor (one being traced has no data yet).
  template <class T>
  const T* data() const;
  const void* raw_data() const {
    require_value("raw_data()");
    return impl_->buffer->data();
  }
  const std::shared_ptr<Buffer>& buffer() const { return impl_->buffer; }
  /// A view for kernels (the data is only ever written by the op that creates the tensor).
  TensorView view() const { return {impl_->buffer ? impl_->buffer->data() : nullptr, shape(), dtype()}; }

  /// Copies the data out, converting to T.
  template <class T>
  std::vector<T> to_vector() const;
  /// The value of a one-element tensor as double; throws ShapeError otherwise.
  double item() const;
  /// A readable dump: "float32[2,3] [[1, 2, 3], [4, 5, 6]]" (long tensors are elided).
  std::string to_string() const;

  /// True when gradients flow to this tensor (it is watched, or it was computed from one that is).
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  /// Marks this tensor as a source for gradients; Variables and GradientTape::watch call it.
  void set_requires_grad(bool value) const { impl_->requires_grad = value; }
  /// The autodiff record, if an op recorded one.
  const detail::GradRecord* grad_record() const { return impl_ ? impl_->grad_record.get() : nullptr; }

  /// True for a tensor made while a jit trace runs: it has a shape and a dtype, but no data.
  bool is_symbolic() const { return impl_ && impl_->symbolic != nullptr; }
  const detail::SymbolicValue* symbolic() const { return impl_ ? impl_->symbolic.get() : nullptr; }

  /// Identity: two handles to the same tensor.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  /// True when no other handle or tensor shares this one's data, so it may be overwritten in
  /// place without anyone seeing (what donating a buffer to a compiled step needs).
  bool is_sole_owner() const {
    return impl_ && impl_.use_count() == 1 && impl_->buffer && impl_->buffer.use_count() == 1;
  }
  const void* id() const { return impl_.get(); }

  /// Used by the op dispatcher to create op outputs.
  explicit Tensor(std::shared_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}
  detail::TensorImpl& impl() const { return *impl_; }

 private:
  // Host code cannot read a traced value (XLA's rule 1): throws JitError naming the op and the fix.
  void require_value(const char* reader) const {
    if (is_symbolic()) throw_symbolic_read(reader);
  }
  [[noreturn]] void throw_symbolic_read(const char* reader) const;

  std::shared_ptr<detail::TensorImpl> impl_;
};

}  // namespace kestrel
