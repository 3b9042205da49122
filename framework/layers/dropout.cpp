#include "framework/layers/dropout.h"

#include <sstream>

#include "framework/core/error.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/training_step.h"
#include "framework/ops/nn.h"

namespace kestrel::layers {

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("Dropout", options.name, options.dtype),
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
  // Folded with ops, not on the host: under jit_compile the step is traced, and each replay of
  // the compiled step folds in its own step count.
  const Tensor call_index = Tensor::scalar(static_cast<double>(next_call_index(this)), DType::int64);
  Tensor key = random::fold_in(random::fold_in(random::key_tensor(base_key_), training_step()), call_index);
  // Replicas see different samples and draw their own masks, as on separate devices.
  if (const distribute::ReplicaContext* replica = distribute::replica_context();
      replica && replica->num_replicas_in_sync() > 1) {
    const Tensor id = replica->id.defined()
                          ? replica->id
                          : Tensor::scalar(static_cast<double>(replica->replica_id_in_sync_group()), DType::int64);
    key = random::fold_in(key, id);
  }
  return ops::dropout(x, rate_, key);
}

}  // namespace kestrel::layers
