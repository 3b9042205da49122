// Inputs: what a model is called on — one tensor, or named tensors (as tf.data dict elements).
//
//   model(x);                                                   // one tensor
//   model(Inputs{{"input_ids", ids}, {"attention_mask", mask}});
//   Tensor call(const Inputs& x, bool training) override { return dense_(x["input_ids"]); }
#pragma once

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
  Inputs(Tensor tensor);                        // NOLINT(google-explicit-constructor): a tensor is the common case
  Inputs(std::map<std::string, Tensor> named);  // NOLINT(google-explicit-constructor)
  Inputs(std::initializer_list<std::pair<const std::string, Tensor>> named);

  bool defined() const { return tensor_.defined() || !named_.empty(); }
  bool is_named() const { return !named_.empty(); }
  /// The single tensor; throws ValueError for named inputs (the message lists the names).
  const Tensor& tensor() const;
  /// A named tensor; throws ValueError naming the missing key and the keys present.
  const Tensor& operator[](const std::string& name) const;
  /// Lets a single-tensor Inputs be passed where a Tensor is expected (layers).
  operator const Tensor&() const { return tensor(); }  // NOLINT(google-explicit-constructor)
  const std::map<std::string, Tensor>& named() const { return named_; }
  /// The tensors: the single one, or the named ones in key order.
  std::vector<Tensor> tensors() const;

  /// Leading dim shared by every tensor; throws ShapeError when they disagree.
  std::int64_t batch_size() const;
  /// Rows [begin, end) of every tensor (contiguous copy).
  Inputs rows(std::int64_t begin, std::int64_t end) const;
  /// The rows listed in `indices` (int64 [n]) of every tensor, in that order.
  Inputs take(const Tensor& indices) const;

 private:
  Tensor tensor_;
  std::map<std::string, Tensor> named_;
};

}  // namespace kestrel
