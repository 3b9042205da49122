// The model the HDF5 fuzz target loads weights into, shared with the program that writes its seeds.
//
//   std::unique_ptr<Sequential> model = kestrel::fuzz::make_hdf5_fuzz_model();   // built, compiled with Adam
//   model->save_weights("seed.weights.h5");
#pragma once

#include <memory>

#include "framework/layers/dense.h"
#include "framework/layers/layer_normalization.h"
#include "framework/model/sequential.h"

namespace kestrel::fuzz {

/// Dense and LayerNormalization layers with Adam's state: weight and optimizer-state datasets in
/// both Keras layouts.
inline std::unique_ptr<Sequential> make_hdf5_fuzz_model() {
  auto model = std::make_unique<Sequential>(
      std::initializer_list<LayerArg>{layers::Dense(3), layers::LayerNormalization(), layers::Dense(2)});
  model->build({1, 4});
  model->compile({.optimizer = "adam", .loss = "mse"});
  return model;
}

}  // namespace kestrel::fuzz
