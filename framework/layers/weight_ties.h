// Weight ties: which weight slots of a layer tree hold one variable, and keeping them that way.
//
//   layers::WeightTies ties = layers::find_weight_ties(model);
//   // ties[0].slots == {"token_embedding/embeddings", "lm_head/kernel"}
//   ... model placed, rebuilt or reloaded ...
//   for (const std::string& fixed : layers::restore_weight_ties(model, ties, "placement on TPUStrategy"))
//     log->warn("re-tied {}", fixed);
//
// A slot is one weight of one layer, named by the layer's path and the weight's own name
// ("transformer_layer_0/dense/kernel"). Two slots are tied when they hold one variable
// (Variable::is_same): a tied input and output embedding, say. Ties are easy to lose without a
// sound: a layer that re-creates its weights, or a placement that copies each slot on its own,
// leaves two variables that train apart. So whatever places or rebuilds a model records its ties
// first and restores them after, and a tie it cannot restore is an error, never a silent untie.
#pragma once

#include <string>
#include <vector>

#include "framework/layers/layer.h"

namespace kestrel::layers {

/// Slots that hold one variable, in the order the model lists its layers; the first holds the value
/// a restored tie keeps.
struct WeightTie {
  std::vector<std::string> slots;

  /// "token_embedding/embeddings = lm_head/kernel"
  std::string to_string() const;
};
using WeightTies = std::vector<WeightTie>;

/// Every group of two or more slots of `root` and its descendants that hold one variable.
WeightTies find_weight_ties(const Layer& root);

/// Makes each of `ties` one variable again: a slot that came apart is tied (Variable::tie_to) to
/// its tie's first slot and takes its value. Returns one line per slot re-tied ("lm_head/kernel to
/// token_embedding/embeddings"), empty when every tie held. Throws ValueError, naming the slots,
/// `when` and the fix, when a slot is gone or can no longer hold the first's value.
std::vector<std::string> restore_weight_ties(const Layer& root, const WeightTies& ties, const std::string& when);

}  // namespace kestrel::layers
