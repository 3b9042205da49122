// Keras configs for losses: the Keras objects a Keras 3 compile config holds, written and read
// back, and the helpers the losses' (and metrics') from_config read their keys with.
//
//   nlohmann::json scce = losses::serialize(losses::SparseCategoricalCrossentropy({.from_logits = true}));
//   // {"module": "keras.losses", "class_name": "SparseCategoricalCrossentropy", "registered_name": null,
//   //  "config": {"name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size",
//   //             "from_logits": true, "ignore_class": null, "axis": -1}}
//   std::shared_ptr<losses::Loss> copy = losses::deserialize(scce);
//   losses::deserialize("mse");                 // a bare name or alias, as losses::get takes it
//
// Reading is as strict as Keras: a key the class does not take is a ValueError naming the class
// and the key, and so is an option Kestrel lacks set to a value that would change the result.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "framework/losses/loss.h"

namespace kestrel::losses {

/// {"module": "keras.losses", "class_name", "config": get_config(), "registered_name": null}.
/// Throws ValueError for a loss whose class is not one of Kestrel's: Keras could not read it back.
nlohmann::json serialize(const Loss& loss);
/// A loss from its Keras object, from Keras's object for a loss function ({"class_name":
/// "function", "config": "mean_squared_error"}), or from a bare name as losses::get takes it.
std::shared_ptr<Loss> deserialize(const nlohmann::json& config);

/// Keras's name of a reduction: "sum_over_batch_size", "sum" or "none".
std::string reduction_name(Reduction reduction);
/// A reduction from its Keras name; "mean" is Keras's other name for sum_over_batch_size and
/// null is none. "mean_with_sample_weight" and anything else are a ValueError naming `what`.
Reduction reduction_from_config(const nlohmann::json& value, const std::string& what);

/// Throws ValueError naming `who` when a Keras object's registered_name names a class of its
/// user's own ("my_package>Huber"): Kestrel makes only built-in classes, and would otherwise read
/// another class's config as the built-in one of the same name.
void check_builtin_object(const nlohmann::json& object, const std::string& class_name, const std::string& who);

/// For a class's from_config, about an option Keras has and Kestrel lacks: throws ValueError
/// naming `what`, the key and its value unless the key is absent, null or `harmless` (the value
/// that changes nothing). `lacking` says what Kestrel does not do, to end the message.
void check_lacking_option(const nlohmann::json& config, const std::string& what, const std::string& key,
                          const nlohmann::json& harmless, const std::string& lacking);

/// What every loss's config holds.
struct LossBase {
  std::string name;
  Reduction reduction = Reduction::sum_over_batch_size;
};
/// name and reduction from a loss's config, `defaults` where absent, after check_config_keys
/// with the base keys and `own_keys`.
LossBase loss_base_from_config(const nlohmann::json& config, const std::string& what,
                               const std::vector<std::string_view>& own_keys, LossBase defaults);

/// A class's options with name and reduction read from `config` (loss_base_from_config) and
/// its own fields at their defaults, for from_config to fill in.
template <class Options>
Options loss_options_from_config(const nlohmann::json& config, const std::string& what,
                                 const std::vector<std::string_view>& own_keys) {
  Options o;
  LossBase base = loss_base_from_config(config, what, own_keys, {o.name, o.reduction});
  o.name = std::move(base.name);
  o.reduction = base.reduction;
  return o;
}

}  // namespace kestrel::losses
