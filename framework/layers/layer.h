// Layer: the base of every layer and model, as keras.layers.Layer.
//
//   class Scale : public Layer {
//    public:
//     Scale() : Layer("Scale") {}
//     void build(const Shape& input_shape) override {
//       scale_ = add_weight("scale", {input_shape[-1]}, "ones");
//     }
//     Tensor call(const Tensor& x, bool training) override { return ops::multiply(x, scale_.value()); }
//    private:
//     Variable scale_;
//   };
//
// A layer builds lazily: the first call creates its weights from the input's shape. Names are
// unique, as in Keras: the first Dense is "dense", the next "dense_1" (clear_session() restarts
// the count). Child layers are created with add<T>(...), which owns them and returns a reference.
//
// Each layer has a precision policy (layers/dtype_policy.h): the one it was given (a layer's
// {.dtype = ...} option), else its parent's when a layer adds it as a child, else the global
// policy when it was made. Its weights are created in the policy's variable dtype, and as it runs
// its floating inputs and weights are cast to the compute dtype (layers/autocast_scope.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/core/tensor.h"
#include "framework/core/variable.h"
#include "framework/layers/dtype_policy.h"
#include "framework/layers/initializers.h"

namespace kestrel {

class Layer;
namespace serialization {
std::unique_ptr<Layer> deserialize_layer(const nlohmann::json& object);
}  // namespace serialization
namespace functional {
struct RecordedCall;  // layers/keras_tensor.h
}  // namespace functional

struct WeightOptions {
  bool trainable = true;
  /// Unset: the layer's variable dtype (its policy's).
  std::optional<DType> dtype;
  /// False: reads are never cast to the compute dtype (Keras's add_weight(autocast=False)), for
  /// weights a layer applies in float32 whatever it computes in (layer normalization's).
  bool autocast = true;
};

class Layer {
 public:
  /// class_name is the Keras class ("Dense"); name defaults to its snake_case form, made unique.
  /// dtype is the layer's precision policy (unset: see above).
  explicit Layer(std::string class_name, std::string name = "", std::optional<DTypePolicy> dtype = std::nullopt);
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;
  /// Moving keeps the name and weights, so layers can be handed to Sequential by value.
  Layer(Layer&& other) noexcept;
  Layer& operator=(Layer&&) = delete;

  /// Builds on first use from x's shape, then runs call(). On a Keras tensor (layers/input_layer.h)
  /// the call is recorded for a Functional model instead, and its output is a Keras tensor too.
  Tensor operator()(const Tensor& x, bool training = false) &;
  /// The same for a temporary layer, as in `layers::Dense(10)(x)`: on a Keras tensor the layer is
  /// moved into the recorded call, which keeps it (its class must be registered, layers/layer_classes.h).
  Tensor operator()(const Tensor& x, bool training = false) &&;
  /// Calls a layer that takes a list of tensors (Add, Concatenate): build_list(), then call_list().
  Tensor operator()(const std::vector<Tensor>& xs, bool training = false) &;
  Tensor operator()(const std::vector<Tensor>& xs, bool training = false) &&;

  /// Creates the weights for inputs of this shape (batch dim first). Called once, by the first call.
  virtual void build(const Shape& input_shape) {}
  /// The computation. Layers with other signatures (attention) leave this and offer their own operator().
  virtual Tensor call(const Tensor& x, bool training);
  /// build() and call() of a layer that takes a list of tensors; the defaults reject lists.
  virtual void build_list(const std::vector<Shape>& input_shapes) {}
  virtual Tensor call_list(const std::vector<Tensor>& xs, bool training);
  /// Calls the layer on Keras tensors as a call read back from a Functional config passes them
  /// (which records it again). The default takes one tensor or a list; a layer with call options
  /// of its own (MultiHeadAttention's attention_mask) overrides it to read them from the call's
  /// keywords. Throws ValueError for arguments the layer does not take.
  virtual Tensor call_recorded(const functional::RecordedCall& call);

  const std::string& name() const { return name_; }
  /// The Keras class name ("Dense").
  const std::string& class_name() const { return class_name_; }
  /// The name path below the outermost model ("transformer_encoder/dense"), used in weight names.
  std::string path() const;
  /// "layer 'dense_1' (Dense): " ("model '...'" for models), the start of every error message about it.
  std::string error_prefix() const {
    return (is_model() ? "model '" : "layer '") + name_ + "' (" + class_name_ + "): ";
  }
  /// True for models: as in Keras, a model's own name is not part of its weights' names.
  virtual bool is_model() const { return false; }
  bool built() const { return built_; }
  Layer* parent() const { return parent_; }

  /// The options the layer was made with, under Keras's keys (Keras's get_config): here the name,
  /// trainable flag and dtype policy; each class adds its own and offers a static from_config that
  /// makes the layer again (layers/serialization.h).
  virtual nlohmann::json get_config() const;
  /// The input shapes the layer was built from (one, or one per tensor of a list call); empty
  /// before it is built, or when it built itself otherwise. Keras's build_config.
  const std::vector<Shape>& build_input_shapes() const { return build_input_shapes_; }
  /// True when the layer was built for a list of tensors.
  bool built_for_list() const { return built_for_list_; }

  /// The precision policy (Keras's layer.dtype_policy).
  const DTypePolicy& dtype_policy() const { return dtype_policy_; }
  /// The policy's variable dtype (Keras's layer.variable_dtype, also layer.dtype).
  DType variable_dtype() const { return dtype_policy_.variable_dtype(); }
  /// The policy's compute dtype (Keras's layer.compute_dtype).
  DType compute_dtype() const { return dtype_policy_.compute_dtype(); }

  /// Trainable then non-trainable weights of this layer and its children, each variable once.
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  /// This layer's weights without its children's, trainable then non-trainable (Keras 3 file order).
  std::vector<Variable> own_weights() const;
  /// Scalars in all weights.
  std::int64_t count_params() const;
  /// Direct children, in creation order.
  const std::vector<Layer*>& layers() const { return children_; }
  /// Per direct child (parallel to layers()), the attribute the layer holds it under, as Keras's
  /// `self.cell = LSTMCell(...)` holds "cell"; empty for a child listed among its layers. Keras 3
  /// weights files put a child held under an attribute in a group of that name.
  const std::vector<std::string>& child_attributes() const { return child_attributes_; }

  bool trainable() const { return trainable_; }
  /// Freezes or unfreezes this layer and its children (Keras's layer.trainable = False).
  void set_trainable(bool trainable);

  /// The shape of the last output, for summaries (empty before the first call).
  const std::optional<Shape>& last_output_shape() const { return last_output_shape_; }

  /// Builds if not built yet; layers with their own call signatures call this first.
  void maybe_build(const Shape& input_shape);
  void maybe_build(const std::vector<Shape>& input_shapes);

 protected:
  /// Creates a weight named "<path>/<name>" from the initializer and the global random stream, in
  /// the policy's variable dtype unless options name another.
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      WeightOptions options = {});
  /// Adds an existing variable to this layer's weights (a weight tied to another layer's).
  void track_weight(const Variable& variable);
  /// Puts `replacement` in the slot that holds `weight`, for layers that re-create a weight
  /// (resizing a vocabulary, say). A tie the old variable had does not carry over: the model's
  /// tie_weights() makes it again, and a strategy placing the model checks (layers/weight_ties.h).
  void replace_weight(const Variable& weight, const Variable& replacement);
  /// Takes ownership of a child layer made elsewhere (a layer made from its config). A non-empty
  /// `attribute` names the part the child plays ("cell"; see child_attributes()): unique among the
  /// children, and neither "layers" nor "vars", the groups a weights file already uses.
  void adopt(std::unique_ptr<Layer> child, std::string attribute = "");
  /// Lists a layer someone else owns among this one's children (a Functional model's layers): its
  /// weights become this layer's, and its parent is this layer unless it already had one.
  void track_layer(Layer& child, std::string attribute = "");
  /// Creates a child layer owned by this one.
  template <class T, class... Args>
  T& add(Args&&... args) {
    return add_as<T>("", std::forward<Args>(args)...);
  }
  /// Creates a child layer owned by this one and held under `attribute`, as Keras's
  /// self.<attribute> = T(...) (see adopt()).
  template <class T, class... Args>
  T& add_as(std::string attribute, Args&&... args) {
    auto child = std::make_unique<T>(std::forward<Args>(args)...);
    T& ref = *child;
    adopt(std::move(child), std::move(attribute));
    return ref;
  }
  /// Remembers the shape of the latest output (summary() shows it). Replicas share the layer, so
  /// only replica 0 (or a thread outside any replica) writes it.
  void record_output_shape(const Shape& shape);
  void mark_built() { built_ = true; }
  /// Records the input shapes a layer that builds itself otherwise than by maybe_build was built
  /// for (a model, on its first call), for its build_config.
  void set_build_input_shapes(std::vector<Shape> shapes) { build_input_shapes_ = std::move(shapes); }

 private:
  /// A layer made from a config takes the config's name, whatever its class's constructor chose.
  friend std::unique_ptr<Layer> serialization::deserialize_layer(const nlohmann::json& object);

  /// Takes `policy` unless this layer was given its own or is built; passed on to the children.
  void inherit_dtype_policy(const DTypePolicy& policy);
  /// Lists `child` under `attribute`, checking the attribute is free.
  void add_child(Layer& child, std::string attribute);
  void collect(std::vector<Variable>& out, bool trainable_part) const;

  std::string class_name_;
  std::string name_;
  Layer* parent_ = nullptr;
  DTypePolicy dtype_policy_;
  bool dtype_policy_given_;  // false: a parent that adopts the layer passes its own down
  std::vector<std::unique_ptr<Layer>> owned_;
  std::vector<Layer*> children_;
  std::vector<std::string> child_attributes_;  // parallel to children_: "" for a listed child
  std::vector<Variable> weights_;
  std::vector<bool> weights_trainable_;  // per weight: made trainable (what unfreezing restores)
  bool trainable_ = true;
  bool built_ = false;
  std::vector<Shape> build_input_shapes_;
  bool built_for_list_ = false;
  std::optional<Shape> last_output_shape_;
};

/// "Dense" -> "dense", "MultiHeadAttention" -> "multi_head_attention", "Conv2D" -> "conv2d".
std::string to_snake_case(std::string_view class_name);

/// Restarts layer name counters (keras.backend.clear_session): the next Dense is "dense" again.
void clear_session();

}  // namespace kestrel
