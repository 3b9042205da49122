// SparseCategoricalCrossentropy: cross-entropy between integer class labels and predicted class
// scores, as keras.losses.SparseCategoricalCrossentropy.
//
//   losses::SparseCategoricalCrossentropy loss({.from_logits = true});
//   Tensor value = loss(labels, logits);          // labels int [batch], logits [batch, classes]
//   losses::SparseCategoricalCrossentropy masked({.from_logits = true, .ignore_class = -1});
//   masked(tokens, logits);                       // -1 labels count neither in the sum nor the mean
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/losses/loss.h"

namespace kestrel::losses {

struct SparseCategoricalCrossentropyOptions {
  /// true: y_pred are logits; false: y_pred are probabilities (normalized, then clipped to
  /// [1e-7, 1 - 1e-7] before the log, as Keras).
  bool from_logits = false;
  /// Labels equal to this are masked: zero loss, zero gradient, and left out of the mean's count.
  std::optional<std::int64_t> ignore_class = std::nullopt;
  /// The class axis of y_pred.
  int axis = -1;
  Reduction reduction = Reduction::sum_over_batch_size;
  std::string name = "sparse_categorical_crossentropy";
};

class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});

  /// Per-position -log p[label]: y_true [...] or [..., 1] of class indices (integers, or floats
  /// holding them), y_pred [..., classes] -> [...].
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  /// 0 where y_true is ignore_class, else 1; undefined without ignore_class.
  Tensor mask(const Tensor& y_true, const Tensor& y_pred) const override;
  /// 0 where y_true is ignore_class, else 1 (float32, shaped like y_true); undefined without ignore_class.
  Tensor label_mask(const Tensor& y_true) const override;

  const SparseCategoricalCrossentropyOptions& options() const { return options_; }
  /// name, reduction, from_logits, ignore_class, axis: Keras's keys.
  nlohmann::json get_config() const override;
  /// From a config get_config() or Keras wrote; Keras's defaults fill absent keys.
  static SparseCategoricalCrossentropy from_config(const nlohmann::json& config);

 private:
  SparseCategoricalCrossentropyOptions options_;
};

}  // namespace kestrel::losses
