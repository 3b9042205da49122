#include "framework/model/inputs.h"

#include "framework/core/error.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {
std::string key_list(const std::map<std::string, Tensor>& named) {
  std::string out;
  for (const auto& [key, value] : named) out += (out.empty() ? "" : ", ") + key;
  return out;
}
}  // namespace

Inputs::Inputs(Tensor tensor) : tensor_(std::move(tensor)) {}
Inputs::Inputs(std::map<std::string, Tensor> named) : named_(std::move(named)) {}
Inputs::Inputs(std::initializer_list<std::pair<const std::string, Tensor>> named) : named_(named) {}

const Tensor& Inputs::tensor() const {
  if (is_named()) {
    throw ValueError("these inputs are named (" + key_list(named_) + "); index them by name, e.g. x[\"" +
                     named_.begin()->first + "\"]");
  }
  return tensor_;
}

const Tensor& Inputs::operator[](const std::string& name) const {
  auto found = named_.find(name);
  if (found == named_.end()) {
    throw ValueError(is_named() ? "inputs have no '" + name + "'; they have: " + key_list(named_)
                                : "inputs are a single tensor, not named; there is no '" + name + "'");
  }
  return found->second;
}

std::vector<std::string> Inputs::names() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : named_) out.push_back(key);
  return out;
}

std::vector<Tensor> Inputs::tensors() const {
  if (!is_named()) return {tensor_};
  std::vector<Tensor> out;
  for (const auto& [key, value] : named_) out.push_back(value);
  return out;
}

std::int64_t Inputs::batch_size() const {
  std::int64_t batch = -1;
  std::string first;
  for (const auto& [key, value] : is_named() ? named_ : std::map<std::string, Tensor>{{"x", tensor_}}) {
    if (value.rank() == 0) throw ShapeError("input '" + key + "' is a scalar; inputs need a leading batch dim");
    if (batch >= 0 && value.shape()[0] != batch) {
      throw ShapeError("inputs disagree on the batch size: '" + first + "' has " + std::to_string(batch) + " rows, '" +
                       key + "' has " + std::to_string(value.shape()[0]));
    }
    if (batch < 0) {
      batch = value.shape()[0];
      first = key;
    }
  }
  return batch;
}

Inputs Inputs::rows(std::int64_t begin, std::int64_t end) const {
  return map([&](const Tensor& t) { return ops::slice_rows(t, begin, end); });
}

Inputs Inputs::take(const Tensor& indices) const {
  return map([&](const Tensor& t) { return ops::gather(t, indices); });
}

Inputs Inputs::map(const std::function<Tensor(const Tensor&)>& fn) const {
  if (!is_named()) return Inputs(tensor_.defined() ? fn(tensor_) : Tensor());
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : named_) out.emplace(key, value.defined() ? fn(value) : Tensor());
  return Inputs(std::move(out));
}

Inputs Inputs::concat_rows(const std::vector<Inputs>& parts) {
  if (parts.empty()) throw ValueError("concat_rows needs at least one part");
  if (!parts.front().is_named()) {
    std::vector<Tensor> tensors;
    for (const Inputs& part : parts) tensors.push_back(part.tensor());
    return Inputs(ops::concat(tensors, 0));
  }
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : parts.front().named()) {
    std::vector<Tensor> tensors;
    for (const Inputs& part : parts) tensors.push_back(part[key]);
    out.emplace(key, ops::concat(tensors, 0));
  }
  return Inputs(std::move(out));
}

}  // namespace kestrel
