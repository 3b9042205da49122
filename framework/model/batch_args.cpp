#include "framework/model/batch_args.h"

#include <map>
#include <string>

namespace kestrel::detail {
namespace {
constexpr const char* kNamedInputPrefix = "x.";
}  // namespace

jit::Args args_of(const Batch& batch) {
  jit::Args args;
  if (batch.x.is_named()) {
    for (const auto& [name, t] : batch.x.named()) args.emplace(kNamedInputPrefix + name, t);
  } else {
    args.emplace("x", batch.x.tensor());
  }
  if (batch.y.defined()) args.emplace("y", batch.y);
  if (batch.sample_weight.defined()) args.emplace("sample_weight", batch.sample_weight);
  if (batch.row_mask.defined()) args.emplace("row_mask", batch.row_mask);
  return args;
}

Batch batch_of(const jit::Args& args) {
  Batch batch;
  std::map<std::string, Tensor> named;
  for (const auto& [name, t] : args) {
    if (name == "x") {
      batch.x = Inputs(t);
    } else if (name.starts_with(kNamedInputPrefix)) {
      named.emplace(name.substr(std::string(kNamedInputPrefix).size()), t);
    } else if (name == "y") {
      batch.y = t;
    } else if (name == "sample_weight") {
      batch.sample_weight = t;
    } else if (name == "row_mask") {
      batch.row_mask = t;
    }
  }
  if (!named.empty()) batch.x = Inputs(std::move(named));
  return batch;
}

}  // namespace kestrel::detail
