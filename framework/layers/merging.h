// Merging layers, as keras.layers.Add, Subtract, Multiply, Average, Maximum, Minimum and
// Concatenate: each takes a list of tensors and returns one.
//
//   Tensor x = Input({64});
//   Tensor h = layers::Dense(64, {.activation = "relu"})(x);
//   Tensor residual = layers::Add()({h, x});                       // [N,64] + [N,64] -> [N,64]
//   Tensor joined = layers::Concatenate()({h, x});                 // -> [N,128], along the last axis
//   Tensor rows = layers::Concatenate({.axis = 1})({seq_a, seq_b}); // [N,5,8] and [N,3,8] -> [N,8,8]
//
// The element-wise layers (Merge below) take two or more tensors (Subtract exactly two) of one
// shape, where, as in Keras, an axis of size 1 broadcasts against any size, and an input of lower
// rank gains size-1 axes right after its batch dim: [N,4] merges with [N,3,4] as [N,1,4]. The
// batch dim follows the same rule, since a Keras tensor (layers/input_layer.h) has a batch of 1
// standing for any batch. Concatenate needs equal ranks and equal sizes on every axis but its own.
// Floating inputs are cast to the layer's compute dtype by the layer call, as in Keras: under
// mixed_bfloat16 the result is bfloat16. None of these layers has weights.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "framework/layers/layer.h"

namespace kestrel::layers {

struct MergeOptions {
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

/// The base of the element-wise merging layers (Keras's Merge): checks the inputs' count and
/// shapes, lines up their ranks, and folds them with merge().
class Merge : public Layer {
 public:
  /// Checks that the shapes merge (see above); a merging layer has no weights to create.
  void build_list(const std::vector<Shape>& input_shapes) override;
  /// Checks the inputs again (a built layer is called on new shapes without building), gives each
  /// the highest rank among them, then merges them.
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;
  /// A single tensor is a ValueError: merging layers take a list.
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

  /// The base config (name, trainable, dtype) only: Keras's Merge layers have no options.
  nlohmann::json get_config() const override;

  const MergeOptions& options() const { return options_; }

 protected:
  /// exact_inputs: how many inputs the layer takes (Subtract: 2); 0 for any number from 2 up.
  Merge(std::string class_name, MergeOptions options, std::size_t exact_inputs = 0);
  /// The merge of inputs of one rank and one dtype, whose shapes broadcast together.
  virtual Tensor merge(const std::vector<Tensor>& xs) const = 0;

 private:
  /// Throws for too few or too many inputs, scalars, or shapes that do not broadcast together.
  void check_shapes(const std::vector<Shape>& shapes) const;

  MergeOptions options_;
  std::size_t exact_inputs_;
};

/// The element-wise sum of the inputs.
class Add : public Merge {
 public:
  explicit Add(MergeOptions options = {});
  static Add from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

/// inputs[0] - inputs[1], on exactly two inputs.
class Subtract : public Merge {
 public:
  explicit Subtract(MergeOptions options = {});
  static Subtract from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

/// The element-wise product of the inputs.
class Multiply : public Merge {
 public:
  explicit Multiply(MergeOptions options = {});
  static Multiply from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

/// The element-wise mean of the inputs; integer inputs give float32, as Keras's true division.
class Average : public Merge {
 public:
  explicit Average(MergeOptions options = {});
  static Average from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

/// The element-wise maximum of the inputs.
class Maximum : public Merge {
 public:
  explicit Maximum(MergeOptions options = {});
  static Maximum from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

/// The element-wise minimum of the inputs.
class Minimum : public Merge {
 public:
  explicit Minimum(MergeOptions options = {});
  static Minimum from_config(const nlohmann::json& config);

 protected:
  Tensor merge(const std::vector<Tensor>& xs) const override;
};

struct ConcatenateOptions {
  /// The axis to join along, counting the batch dim as axis 0; negative counts from the end.
  int axis = -1;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

/// Joins two or more tensors along options.axis; every other axis must have the same size.
class Concatenate : public Layer {
 public:
  explicit Concatenate(ConcatenateOptions options = {});

  /// Checks the count, the ranks, the axis and the sizes off the axis.
  void build_list(const std::vector<Shape>& input_shapes) override;
  /// Checks again (a built layer is called on new shapes without building), then joins.
  Tensor call_list(const std::vector<Tensor>& xs, bool training) override;
  /// A single tensor is a ValueError: Concatenate takes a list.
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Concatenate from_config(const nlohmann::json& config);

  int axis() const { return options_.axis; }
  const ConcatenateOptions& options() const { return options_; }

 private:
  /// The axis, made non-negative; throws when the shapes cannot be joined along it.
  int checked_axis(const std::vector<Shape>& shapes) const;

  ConcatenateOptions options_;
};

}  // namespace kestrel::layers
