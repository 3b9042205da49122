#include "framework/autodiff/backward.h"

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/primitive.h"

namespace kestrel::autodiff::detail {
namespace {

// Tensors reachable from target through recorded ops, ordered so that every tensor comes
// after all tensors computed from it (reverse topological order of the forward pass).
std::vector<Tensor> reverse_topological_order(const Tensor& target) {
  std::vector<Tensor> order;
  std::unordered_set<const void*> visited;
  // Iterative post-order DFS: deep graphs (long RNN-like chains) must not overflow the stack.
  struct Frame {
    Tensor tensor;
    std::size_t next_input;
  };
  std::vector<Frame> stack;
  stack.push_back({target, 0});
  visited.insert(target.id());
  while (!stack.empty()) {
    Frame& top = stack.back();
    const auto* record = top.tensor.grad_record();
    if (record != nullptr && top.next_input < record->inputs.size()) {
      const Tensor& input = record->inputs[top.next_input++];
      if (input.requires_grad() && visited.insert(input.id()).second) stack.push_back({input, 0});
      continue;
    }
    order.push_back(top.tensor);
    stack.pop_back();
  }
  return {order.rbegin(), order.rend()};
}

}  // namespace

std::vector<Tensor> backward(const Tensor& target, const Tensor& seed, const std::vector<Tensor>& sources) {
  if (seed.shape() != target.shape()) {
    throw ShapeError("[gradient] the output gradient is " + seed.shape().to_string() + " but the target is " +
                     target.shape().to_string() + "; they must match");
  }
  std::unordered_map<const void*, Tensor> cotangents;
  if (target.requires_grad()) {
    cotangents[target.id()] = seed;
    for (const Tensor& node : reverse_topological_order(target)) {
      const auto* record = node.grad_record();
      auto found = cotangents.find(node.id());
      if (record == nullptr || found == cotangents.end()) continue;
      const Tensor cotangent = found->second;

      std::unique_ptr<bool[]> wanted(new bool[record->inputs.size()]);
      bool any_wanted = false;
      for (std::size_t i = 0; i < record->inputs.size(); ++i) {
        wanted[i] = record->inputs[i].requires_grad();
        any_wanted |= wanted[i];
      }
      if (!any_wanted) continue;
      std::vector<Tensor> grads = record->primitive->vjp(
          {record->inputs, node, cotangent, std::span<const bool>(wanted.get(), record->inputs.size())});
      for (std::size_t i = 0; i < record->inputs.size() && i < grads.size(); ++i) {
        if (!wanted[i] || !grads[i].defined()) continue;
        const Tensor& input = record->inputs[i];
        KESTREL_DCHECK(grads[i].shape() == input.shape());
        auto [slot, inserted] = cotangents.try_emplace(input.id(), grads[i]);
        if (!inserted) slot->second = ops::add(slot->second, grads[i]);
      }
    }
  }
  std::vector<Tensor> out;
  out.reserve(sources.size());
  for (const Tensor& source : sources) {
    auto found = cotangents.find(source.id());
    out.push_back(found != cotangents.end() ? found->second : Tensor::zeros(source.shape(), source.dtype()));
  }
  return out;
}

}  // namespace kestrel::autodiff::detail
