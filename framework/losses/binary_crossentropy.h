// BinaryCrossentropy: cross-entropy for yes/no targets, as keras.losses.BinaryCrossentropy.
//
//   losses::BinaryCrossentropy loss({.from_logits = true});
//   Tensor value = loss(labels, logits);   // labels 0/1 [batch, 1] (or [batch]), logits [batch, 1]
#pragma once

#include <string>

#include "framework/losses/loss.h"

namespace kestrel::losses {

struct BinaryCrossentropyOptions {
  /// true: y_pred are logits (computed in the stable form max(x, 0) - x * z + log(1 + exp(-|x|)));
  /// false: probabilities, clipped to [1e-7, 1 - 1e-7].
  bool from_logits = false;
  /// In [0, 1]: targets are squeezed towards 0.5, y_true * (1 - s) + 0.5 * s.
  double label_smoothing = 0.0;
  /// The axis the per-element losses are averaged over.
  int axis = -1;
  Reduction reduction = Reduction::sum_over_batch_size;
  std::string name = "binary_crossentropy";
};

class BinaryCrossentropy : public Loss {
 public:
  /// Throws ValueError when label_smoothing is outside [0, 1].
  explicit BinaryCrossentropy(BinaryCrossentropyOptions options = {});

  /// Per-element cross-entropy averaged over axis: [batch, d] -> [batch]. y_true [batch] with
  /// y_pred [batch, 1] is aligned to [batch, 1] first, as Keras does.
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;

  const BinaryCrossentropyOptions& options() const { return options_; }
  /// name, reduction, from_logits, label_smoothing, axis: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static BinaryCrossentropy from_config(const nlohmann::json& config);

 private:
  BinaryCrossentropyOptions options_;
};

}  // namespace kestrel::losses
