// CategoricalCrossentropy: cross-entropy between one-hot (or soft) targets and predicted class
// scores, as keras.losses.CategoricalCrossentropy.
//
//   losses::CategoricalCrossentropy loss({.from_logits = true, .label_smoothing = 0.1});
//   Tensor value = loss(one_hot_targets, logits);   // both [batch, classes]
#pragma once

#include <string>

#include "framework/losses/loss.h"

namespace kestrel::losses {

struct CategoricalCrossentropyOptions {
  /// true: y_pred are logits; false: probabilities (normalized, then clipped to [1e-7, 1 - 1e-7]).
  bool from_logits = false;
  /// In [0, 1]: targets become y_true * (1 - s) + s / classes.
  double label_smoothing = 0.0;
  /// The class axis.
  int axis = -1;
  Reduction reduction = Reduction::sum_over_batch_size;
  std::string name = "categorical_crossentropy";
};

class CategoricalCrossentropy : public Loss {
 public:
  /// Throws ValueError when label_smoothing is outside [0, 1].
  explicit CategoricalCrossentropy(CategoricalCrossentropyOptions options = {});

  /// -sum(y_true * log p) over the class axis: y_true and y_pred [..., classes] -> [...].
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;

  const CategoricalCrossentropyOptions& options() const { return options_; }
  /// name, reduction, from_logits, label_smoothing, axis: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static CategoricalCrossentropy from_config(const nlohmann::json& config);

 private:
  CategoricalCrossentropyOptions options_;
};

}  // namespace kestrel::losses
