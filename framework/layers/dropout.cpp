#include "framework/layers/dropout.h"

#include <sstream>

#include "framework/core/error.h"
#include "framework/layers/training_step.h"
#include "framework/ops/nn.h"

namespace kestrel::layers {

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("Dropout", options.name),
      rate_(rate),
      base_key_(options.seed ? random::Key(*options.seed) : random::next_global_key()) {
  if (!(rate >= 0.0 && rate < 1.0)) {
    std::ostringstream r;
    r << rate;
    throw ValueError("layer '" + name() + "' (Dropout): rate is " + r.str() +
                     "; it must be in [0, 1) (the fraction of inputs to drop)");
  }
}

Tensor Dropout::call(const Tensor& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  random::Key key = base_key_.fold_in(static_cast<std::uint64_t>(training_step()))
                        .fold_in(static_cast<std::uint64_t>(next_call_index(this)));
  return ops::dropout(x, rate_, random::key_tensor(key));
}

}  // namespace kestrel::layers
