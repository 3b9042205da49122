// Dropout, as keras.layers.Dropout: zeroes inputs with probability rate while training and scales
// the rest by 1 / (1 - rate); at inference it is the identity.
//
//   layers::Dropout drop(0.1);
//   Tensor y = drop(x, /*training=*/true);
//   layers::Dropout fixed(0.5, {.seed = 42});   // the same masks in every run
//
// The mask key is seed.fold_in(training_step()).fold_in(call index within the step)
// (framework/layers/training_step.h), folded with ops so a compiled step draws new masks at every
// step; a resumed run draws the same masks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "framework/core/random.h"
#include "framework/layers/layer.h"

namespace kestrel::layers {

struct DropoutOptions {
  /// Seeds the masks; without it the layer takes the next key of the global random stream.
  std::optional<std::uint64_t> seed;
  std::string name;
  /// The precision policy (unset: the parent's, else the global one; layers/dtype_policy.h).
  std::optional<DTypePolicy> dtype;
};

class Dropout : public Layer {
 public:
  /// rate in [0, 1): the fraction of inputs zeroed while training.
  explicit Dropout(double rate, DropoutOptions options = {});

  Tensor call(const Tensor& x, bool training) override;

  nlohmann::json get_config() const override;
  static Dropout from_config(const nlohmann::json& config);

  double rate() const { return rate_; }
  /// The key every mask of this layer derives from.
  const random::Key& base_key() const { return base_key_; }

 private:
  double rate_;
  std::optional<std::uint64_t> seed_;
  random::Key base_key_;
};

}  // namespace kestrel::layers
