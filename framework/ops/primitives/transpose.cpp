// transpose: permutes axes; the kernel is framework/ops/kernels/transpose.cpp.
#include <optional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/kernels/transpose.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

std::string perm_to_string(const std::vector<int>& perm) {
  std::string out = "[";
  for (std::size_t i = 0; i < perm.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(perm[i]);
  }
  return out + "]";
}

class Transpose final : public PrimitiveOf<Transpose, OpId::transpose> {
 public:
  explicit Transpose(std::vector<int> perm) : perm_(std::move(perm)) {}
  auto fields() const { return std::tie(perm_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const Shape& x = in[0].shape;
    if (static_cast<int>(perm_.size()) != x.rank()) {
      throw ShapeError(op_message("transpose", "perm " + perm_to_string(perm_) + " has " +
                                                   std::to_string(perm_.size()) + " entries but x is " +
                                                   in[0].to_string() + " (rank " + std::to_string(x.rank()) +
                                                   "); perm needs one entry per axis"));
    }
    std::vector<bool> seen(perm_.size(), false);
    for (int p : perm_) {
      if (p < 0 || p >= x.rank() || seen[static_cast<std::size_t>(p)]) {
        throw ValueError(op_message("transpose", "perm " + perm_to_string(perm_) + " is not a permutation of [0, " +
                                                     std::to_string(x.rank()) + ") for x " + in[0].to_string() +
                                                     "; each axis must appear exactly once"));
      }
      seen[static_cast<std::size_t>(p)] = true;
    }
    Shape out;
    for (int p : perm_) out.push_back(x[p]);
    return {out, in[0].dtype};
  }

  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    kernels::transpose(in[0], out, perm_);
  }

  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    if (!a.wanted[0] || !is_floating(a.primals[0].dtype())) return {Tensor()};
    std::vector<int> inverse(perm_.size());
    for (std::size_t k = 0; k < perm_.size(); ++k) inverse[static_cast<std::size_t>(perm_[k])] = static_cast<int>(k);
    return {transpose(a.cotangent, inverse)};
  }

  std::string params() const override { return "perm=" + perm_to_string(perm_); }
  const std::vector<int>& perm() const { return perm_; }
  bool handles_bfloat16() const override { return true; }

 private:
  std::vector<int> perm_;
};

}  // namespace

Tensor transpose(const Tensor& x, const std::vector<int>& perm) {
  if (!x.defined()) {
    throw ValueError(op_message("transpose", "x is an undefined tensor; pass a tensor with a value"));
  }
  const int rank = x.rank();
  std::vector<int> full(static_cast<std::size_t>(rank));
  if (perm.empty()) {
    for (int k = 0; k < rank; ++k) full[static_cast<std::size_t>(k)] = rank - 1 - k;
  } else {
    // Negative entries count from the end, as axes do everywhere else; infer() checks the rest.
    full.assign(perm.begin(), perm.end());
    for (int& p : full) {
      if (p < 0 && p >= -rank) p += rank;
    }
  }
  bool identity = static_cast<int>(full.size()) == rank;
  for (int k = 0; identity && k < rank; ++k) identity = full[static_cast<std::size_t>(k)] == k;
  if (identity) return x;
  return detail::apply_new<Transpose>({x}, std::move(full));
}

}  // namespace kestrel::ops

namespace kestrel::detail {

std::optional<std::vector<int>> transpose_perm(const Primitive& primitive) {
  const auto* transpose = dynamic_cast<const ops::Transpose*>(&primitive);
  return transpose != nullptr ? std::optional(transpose->perm()) : std::nullopt;
}

}  // namespace kestrel::detail
