// Loss: the base of Keras-style losses.
//
//   losses::SparseCategoricalCrossentropy loss({.from_logits = true});
//   Tensor value = loss(labels, logits);                  // scalar, mean over the batch
//   Tensor weighted = loss(labels, logits, sample_weight);
//
// A subclass implements call(), the unreduced per-sample loss; operator() applies sample
// weights and the reduction, as keras.losses.Loss.__call__ does.
//
// get_config() holds a loss's options under Keras's keys; losses::serialize and deserialize
// (framework/losses/serialization.h) write and read the Keras object a compile config holds.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/core/handle.h"
#include "framework/core/tensor.h"

namespace kestrel::losses {

enum class Reduction {
  sum_over_batch_size,  ///< sum of weighted losses / number of (unmasked) elements — Keras's default
  sum,                  ///< sum of weighted losses
  none,                 ///< the weighted per-sample losses
};

class Loss {
 public:
  Loss(std::string name, Reduction reduction) : name_(std::move(name)), reduction_(reduction) {}
  virtual ~Loss() = default;

  /// Per-sample losses, e.g. [batch] for a [batch, classes] prediction; not yet weighted or reduced.
  virtual Tensor call(const Tensor& y_true, const Tensor& y_pred) const = 0;
  /// Elements that count (1) and do not (0), shaped like call()'s result; undefined when all count.
  /// SparseCategoricalCrossentropy's ignore_class uses it; masked elements leave the mean's count.
  virtual Tensor mask(const Tensor& y_true, const Tensor& y_pred) const { return Tensor(); }
  /// The same mask when the labels alone decide it, shaped like y_true (a trailing axis of 1
  /// kept); undefined when every element counts. Replicas weigh their shares of a global batch's
  /// mean loss by it before any prediction exists (see framework/model/replica_steps.h).
  virtual Tensor label_mask(const Tensor& y_true) const { return Tensor(); }

  /// call(), times sample_weight (broadcast to the per-sample losses) and the mask, then reduced.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = Tensor()) const;

  const std::string& name() const { return name_; }
  Reduction reduction() const { return reduction_; }
  /// The options under Keras's keys (Keras's get_config): name and reduction ("sum_over_batch_size",
  /// "sum" or "none"); each class adds its own.
  virtual nlohmann::json get_config() const;

 private:
  std::string name_;
  Reduction reduction_;
};

/// A loss by Keras name or alias ("sparse_categorical_crossentropy", "mse", "mae", ...);
/// throws ValueError listing the names for anything else.
Handle<Loss> get(std::string_view name);
/// The canonical name of every loss get() knows, in its order (for listings, and tests that
/// must cover every loss).
std::vector<std::string> names();

}  // namespace kestrel::losses
