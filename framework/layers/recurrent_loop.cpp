#include "framework/layers/recurrent_loop.h"

#include <cstdint>
#include <string>

#include "framework/core/error.h"
#include "framework/layers/layer.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::layers::detail {
namespace {

// Time step t of a time-major tensor [time, ...], without its time axis.
Tensor time_step(const Tensor& inputs, std::int64_t t) {
  std::vector<std::int64_t> begin(static_cast<std::size_t>(inputs.rank()), 0);
  std::vector<std::int64_t> size(static_cast<std::size_t>(inputs.rank()), -1);
  begin[0] = t;
  size[0] = 1;
  return ops::squeeze(ops::slice(inputs, begin, size), {0});
}

Tensor unrolled(const ops::ScanFunction& step, const Tensor& inputs, std::vector<Tensor> state,
                const std::vector<Tensor>& consts, const RecurrentLoopOptions& options) {
  const std::int64_t steps = inputs.shape()[0];
  std::vector<Tensor> outputs;
  for (std::int64_t s = 0; s < steps; ++s) {
    const std::int64_t t = options.go_backwards ? steps - 1 - s : s;
    state = step(state, {time_step(inputs, t)}, consts).carry;
    if (options.return_sequences) outputs.push_back(ops::expand_dims(state[0], 1));
  }
  return options.return_sequences ? ops::concat(outputs, 1) : state[0];
}

Tensor looped(const ops::ScanFunction& step, const Tensor& inputs, const std::vector<Tensor>& initial_state,
              const std::vector<Tensor>& consts, const RecurrentLoopOptions& options) {
  const ops::ScanResult r =
      ops::scan(step, {.carry = initial_state, .xs = {inputs}, .consts = consts}, {.reverse = options.go_backwards});
  if (!options.return_sequences) return r.carry[0];
  // Row t holds the step that read time step t; Keras lists the outputs in the order the steps ran.
  Tensor outputs = r.stacked_carry(0);
  if (options.go_backwards) {
    const std::int64_t steps = outputs.shape()[0];
    std::vector<std::int64_t> reversed(static_cast<std::size_t>(steps));
    for (std::int64_t t = 0; t < steps; ++t) reversed[static_cast<std::size_t>(t)] = steps - 1 - t;
    outputs = ops::gather(outputs, Tensor::from_vector(reversed, {steps}), 0);
  }
  std::vector<int> batch_first{1, 0};
  for (int d = 2; d < outputs.rank(); ++d) batch_first.push_back(d);
  return ops::transpose(outputs, batch_first);
}

}  // namespace

void check_sequences(const Layer& layer, const TensorSpec& input, std::int64_t features) {
  const Shape& shape = input.shape;
  if (shape.rank() != 3) {
    std::string fix = "";
    if (shape.rank() == 2)
      fix = ": add the time axis with ops::expand_dims(x, 1), or the feature axis with ops::expand_dims(x, -1)";
    throw ShapeError(layer.error_prefix() + "input is " + shape.to_string() + "; " + layer.class_name() +
                     " takes sequences [batch, time, features]" + fix);
  }
  if (shape[1] < 1) {
    throw ShapeError(layer.error_prefix() + "input is " + shape.to_string() +
                     ": a sequence of 0 time steps; pad sequences to at least one step");
  }
  if (features >= 0 && shape[2] != features) {
    throw ShapeError(layer.error_prefix() + "input is " + shape.to_string() + " but the layer was built for " +
                     std::to_string(features) + " features; feed [batch, time, " + std::to_string(features) +
                     "] sequences, or use a new layer");
  }
  if (!is_floating(input.dtype)) {
    throw TypeError(layer.error_prefix() + "input is " + input.to_string() + "; " + layer.class_name() +
                    " needs a floating input: convert it with ops::cast(x, DType::float32), or embed token ids "
                    "first (layers::Embedding)");
  }
}

Tensor run_recurrent_loop(const ops::ScanFunction& step, const Tensor& inputs, const std::vector<Tensor>& initial_state,
                          const std::vector<Tensor>& consts, const RecurrentLoopOptions& options) {
  return options.unroll ? unrolled(step, inputs, initial_state, consts, options)
                        : looped(step, inputs, initial_state, consts, options);
}

}  // namespace kestrel::layers::detail
