#include "framework/model/batch_args.h"

#include <map>
#include <string>
#include <string_view>

namespace kestrel::detail {
namespace {
constexpr const char* kNamedInputPrefix = "x.";
constexpr const char* kNamedTargetPrefix = "y.";
constexpr std::string_view kStepPrefix = "step";
}  // namespace

jit::Args args_of(const Batch& batch) {
  jit::Args args;
  if (batch.x.is_named()) {
    for (const auto& [name, t] : batch.x.named()) args.emplace(kNamedInputPrefix + name, t);
  } else {
    args.emplace("x", batch.x.tensor());
  }
  if (batch.y.is_named()) {
    for (const auto& [name, t] : batch.y.named()) args.emplace(kNamedTargetPrefix + name, t);
  } else if (batch.y.defined()) {
    args.emplace("y", batch.y.tensor());
  }
  if (batch.sample_weight.defined()) args.emplace("sample_weight", batch.sample_weight);
  if (batch.row_mask.defined()) args.emplace("row_mask", batch.row_mask);
  return args;
}

Batch batch_of(const jit::Args& args) {
  Batch batch;
  std::map<std::string, Tensor> named, targets;
  for (const auto& [name, t] : args) {
    if (name == "x") {
      batch.x = Inputs(t);
    } else if (name.starts_with(kNamedInputPrefix)) {
      named.emplace(name.substr(std::string(kNamedInputPrefix).size()), t);
    } else if (name == "y") {
      batch.y = Outputs(t);
    } else if (name.starts_with(kNamedTargetPrefix)) {
      targets.emplace(name.substr(std::string(kNamedTargetPrefix).size()), t);
    } else if (name == "sample_weight") {
      batch.sample_weight = t;
    } else if (name == "row_mask") {
      batch.row_mask = t;
    }
  }
  if (!named.empty()) batch.x = Inputs(std::move(named));
  if (!targets.empty()) batch.y = Outputs(std::move(targets));
  return batch;
}

jit::Args join_steps(const std::vector<jit::Args>& steps) {
  if (steps.size() == 1) return steps[0];
  jit::Args out;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    for (const auto& [name, t] : steps[k]) out.emplace(std::string(kStepPrefix) + std::to_string(k) + "/" + name, t);
  }
  return out;
}

std::vector<jit::Args> split_steps(const jit::Args& args) {
  std::vector<jit::Args> steps;
  jit::Args common;  // names without a step's prefix (the replica id) belong to every step
  for (const auto& [name, t] : args) {
    const std::size_t slash = name.find('/');
    if (!name.starts_with(kStepPrefix) || slash == std::string::npos) {
      common.emplace(name, t);
      continue;
    }
    const std::size_t k = std::stoul(name.substr(kStepPrefix.size(), slash - kStepPrefix.size()));
    if (steps.size() <= k) steps.resize(k + 1);
    steps[k].emplace(name.substr(slash + 1), t);
  }
  if (steps.empty()) return {common};
  for (jit::Args& step : steps) step.insert(common.begin(), common.end());
  return steps;
}

}  // namespace kestrel::detail
