#include "framework/layers/dense.h"

#include <utility>

#include "framework/core/error.h"
#include "framework/layers/serialization.h"
#include "framework/ops/ops.h"

namespace kestrel::layers {
Dense::Dense(std::int64_t units, DenseOptions options)
    : Layer("Dense", options.name, options.dtype), units_(units), options_(std::move(options)) {
  if (units_ <= 0) throw ValueError(error_prefix() + "units is " + std::to_string(units_) + "; it must be positive");
}

void Dense::build(const Shape& input_shape) {
  if (input_shape.rank() < 2) {
    throw ShapeError(error_prefix() + "input is " + input_shape.to_string() +
                     "; Dense needs rank >= 2 ([batch, ..., features]): add a batch axis with ops::expand_dims(x, 0)");
  }
  kernel_ = add_weight("kernel", {input_shape[-1], units_}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", {units_}, options_.bias_initializer);
}

Tensor Dense::call(const Tensor& x, bool training) {
  if (x.rank() < 2) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() +
                     "; Dense needs rank >= 2 ([batch, ..., features]): add a batch axis with ops::expand_dims(x, 0)");
  }
  if (x.shape()[-1] != kernel_.shape()[0]) {
    throw ShapeError(error_prefix() + "input is " + x.shape().to_string() + " but the layer was built for " +
                     std::to_string(kernel_.shape()[0]) + " input features (kernel " + kernel_.shape().to_string() +
                     "); feed inputs whose last dim is " + std::to_string(kernel_.shape()[0]) +
                     ", or use a new Dense layer");
  }
  if (!is_floating(x.dtype())) {
    throw TypeError(error_prefix() + "input is " + x.spec().to_string() +
                    "; Dense needs a floating input: convert it with ops::cast(x, DType::float32)");
  }
  const Tensor kernel = kernel_.value();
  const Tensor bias = bias_.defined() ? bias_.value() : Tensor();
  // The bias goes in the matrix multiply's epilogue, added to the float32 sums as the product is
  // stored. In bfloat16 that rounds the biased product once, where a separate add would round the
  // product and then the sum; eager and compiled calls both take this path, so they agree. So
  // does a relu or GELU: ops::matmul applies it in the GEMM where nothing records the call (an
  // eager predict), and as its op otherwise, with the same bits.
  if (!bias.defined() || (x.dtype() == kernel.dtype() && bias.dtype() == kernel.dtype())) {
    const ops::MatmulActivation activation = options_.activation.matmul_activation();
    const Tensor y = ops::matmul(x, kernel, {.bias = bias, .activation = activation});
    return activation == ops::MatmulActivation::none ? options_.activation(y) : y;
  }
  return options_.activation(ops::add(ops::matmul(x, kernel), bias));
}

nlohmann::json Dense::get_config() const {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  nlohmann::json config = Layer::get_config();
  config["units"] = units_;
  put_kernel_options(config, options_, error_prefix());
  return config;
}

Dense Dense::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Dense'";
  LayerBase base = layer_base_from_config(config, what);
  DenseOptions options{.name = std::move(base.name), .dtype = base.dtype};
  read_kernel_options(config, options, what);
  return Dense(required<std::int64_t>(config, "units", what), std::move(options));
}

}  // namespace kestrel::layers
