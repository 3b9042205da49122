#include "framework/layers/activation.h"

#include <utility>

namespace kestrel::layers {

Activation::Activation(ActivationFn activation, ActivationOptions options)
    : Layer("Activation", options.name, options.dtype), activation_(std::move(activation)) {}

}  // namespace kestrel::layers
