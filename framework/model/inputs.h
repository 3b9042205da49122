// Inputs: what a model is called on — one tensor, or named tensors (as tf.data dict elements).
// The same structure holds what a model gives back and is trained toward (Outputs): one tensor,
// or, for a model of several outputs, a tensor per output name.
//
//   model(x);                                                   // one tensor
//   model(Inputs{{"input_ids", ids}, {"attention_mask", mask}});
//   Tensor call(const Inputs& x, bool training) override { return dense_(x["input_ids"]); }
//   Outputs predicted = two_headed.predict(x);                  // predicted["digit"], predicted["size"]
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel {

class Inputs {
 public:
  Inputs() = default;
  Inputs(Tensor tensor);  // NOLINT(google-explicit-constructor): a tensor is the common case
  // NOLINTNEXTLINE(google-explicit-constructor): fit takes a tensor or named tensors, as Keras does
  Inputs(std::map<std::string, Tensor> named);
  Inputs(std::initializer_list<std::pair<const std::string, Tensor>> named);

  bool defined() const { return tensor_.defined() || !named_.empty(); }
  bool is_named() const { return !named_.empty(); }
  /// The single tensor; throws ValueError for named inputs (the message lists the names).
  const Tensor& tensor() const;
  /// A named tensor; throws ValueError naming the missing key and the keys present.
  const Tensor& operator[](const std::string& name) const;
  /// Lets a single-tensor Inputs be passed where a Tensor is expected (layers).
  // NOLINTNEXTLINE(google-explicit-constructor): fit takes a tensor or named tensors, as Keras does
  operator const Tensor&() const { return tensor(); }
  const std::map<std::string, Tensor>& named() const { return named_; }
  /// The tensors: the single one, or the named ones in key order.
  std::vector<Tensor> tensors() const;
  /// The names, in key order (none for a single tensor).
  std::vector<std::string> names() const;

  /// Leading dim shared by every tensor; throws ShapeError when they disagree.
  std::int64_t batch_size() const;
  /// Rows [begin, end) of every tensor (contiguous copy).
  Inputs rows(std::int64_t begin, std::int64_t end) const;
  /// The rows listed in `indices` (int64 [n]) of every tensor, in that order.
  Inputs take(const Tensor& indices) const;
  /// The same structure with `fn` applied to each tensor (an undefined one stays undefined).
  Inputs map(const std::function<Tensor(const Tensor&)>& fn) const;
  /// Each key's tensors concatenated along rows (all parts share one structure; none may be empty).
  static Inputs concat_rows(const std::vector<Inputs>& parts);

 private:
  Tensor tensor_;
  std::map<std::string, Tensor> named_;
};

/// A model's outputs, and the targets (y) it is trained toward: one tensor, or a tensor per
/// output name for a model of several outputs.
using Outputs = Inputs;

}  // namespace kestrel
