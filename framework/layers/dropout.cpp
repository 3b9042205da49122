#include "framework/layers/dropout.h"

#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/distribute/replica_context.h"
#include "framework/layers/serialization.h"
#include "framework/layers/training_step.h"
#include "framework/ops/nn.h"

namespace kestrel::layers {

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("Dropout", options.name, options.dtype),
      rate_(rate),
      seed_(options.seed),
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

nlohmann::json Dropout::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["rate"] = rate_;
  config["seed"] = serialization::seed_to_config(seed_);
  config["noise_shape"] = nullptr;  // one mask entry per input entry
  return config;
}

Dropout Dropout::from_config(const nlohmann::json& config) {
  using namespace serialization;  // NOLINT(google-build-using-namespace): the config helpers read as Keras's
  const std::string what = "layer class 'Dropout'";
  LayerBase base = layer_base_from_config(config, what);
  check_null(config, {"activity_regularizer"}, what);
  check_unsupported(config, "noise_shape", nullptr, what,
                    "Kestrel's Dropout draws one mask entry per input entry: set 'noise_shape' to null");
  return Dropout(required<double>(config, "rate", what),
                 {.seed = seed_from_config(config, what), .name = std::move(base.name), .dtype = base.dtype});
}

}  // namespace kestrel::layers
