#include "framework/layers/weight_ties.h"

#include <map>
#include <utility>

#include "framework/core/error.h"

namespace kestrel::layers {
namespace {

struct Slot {
  std::string name;
  Variable variable;
};

std::string slot_name(const Layer& layer, const Variable& variable) {
  // A weight's name is "<creating layer's path>/<name>"; a slot is named after the layer holding it.
  const std::string& full = variable.name();
  const std::string base = full.substr(full.rfind('/') + 1);
  const std::string prefix = layer.path();
  return prefix.empty() ? layer.name() + "/" + base : prefix + "/" + base;
}

void collect_slots(const Layer& layer, std::vector<Slot>& out) {
  for (const Variable& v : layer.own_weights()) out.push_back({slot_name(layer, v), v});
  for (const Layer* child : layer.layers()) collect_slots(*child, out);
}

std::vector<Slot> slots_of(const Layer& root) {
  std::vector<Slot> out;
  collect_slots(root, out);
  return out;
}

}  // namespace

std::string WeightTie::to_string() const {
  std::string out;
  for (const std::string& slot : slots) out += (out.empty() ? "" : " = ") + slot;
  return out;
}

WeightTies find_weight_ties(const Layer& root) {
  std::vector<Slot> slots = slots_of(root);
  std::map<const void*, std::size_t> tie_of;  // variable id -> its index in `groups`
  std::vector<WeightTie> groups;
  for (const Slot& slot : slots) {
    auto [found, inserted] = tie_of.try_emplace(slot.variable.id(), groups.size());
    if (inserted) groups.emplace_back();
    groups[found->second].slots.push_back(slot.name);
  }
  WeightTies out;
  for (WeightTie& group : groups) {
    if (group.slots.size() > 1) out.push_back(std::move(group));
  }
  return out;
}

std::vector<std::string> restore_weight_ties(const Layer& root, const WeightTies& ties, const std::string& when) {
  std::map<std::string, Variable> by_name;
  for (Slot& slot : slots_of(root)) by_name.emplace(slot.name, std::move(slot.variable));
  const std::string fix =
      "; tie them again in the model's tie_weights() (Variable::tie_to), after the layers are built";
  std::vector<std::string> retied;
  for (const WeightTie& tie : ties) {
    auto lookup = [&](const std::string& slot) -> const Variable& {
      auto found = by_name.find(slot);
      if (found == by_name.end()) {
        throw ValueError(root.error_prefix() + "the tied weights " + tie.to_string() + " came apart at " + when +
                         ": slot '" + slot + "' no longer exists" + fix);
      }
      return found->second;
    };
    const Variable& first = lookup(tie.slots.front());
    for (std::size_t i = 1; i < tie.slots.size(); ++i) {
      const Variable& slot = lookup(tie.slots[i]);
      if (slot.is_same(first)) continue;
      try {
        slot.tie_to(first);
      } catch (const Error& e) {
        throw ValueError(root.error_prefix() + "the tied weights " + tie.to_string() + " came apart at " + when +
                         " and cannot be tied again: " + e.what() + fix);
      }
      retied.push_back(tie.slots[i] + " to " + tie.slots.front());
    }
  }
  return retied;
}

}  // namespace kestrel::layers
