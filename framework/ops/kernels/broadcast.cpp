#include "framework/ops/kernels/broadcast.h"

#include "framework/core/error.h"

namespace kestrel::kernels {

BroadcastIndexer::BroadcastIndexer(const Shape& out, std::initializer_list<Shape> inputs)
    : inputs_(static_cast<int>(inputs.size())) {
  KESTREL_DCHECK(inputs_ <= kMaxInputs);
  const int rank = out.rank();
  // Per input, the element stride of each output dim (0 where the input is broadcast).
  std::array<std::vector<std::int64_t>, kMaxInputs> strides;
  int i = 0;
  for (const Shape& in : inputs) {
    auto& s = strides[static_cast<std::size_t>(i++)];
    s.assign(static_cast<std::size_t>(rank), 0);
    std::int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      int din = in.rank() - rank + d;
      if (din >= 0 && in[din] != 1) {
        s[static_cast<std::size_t>(d)] = stride;
        stride *= in[din];
      }
    }
  }

  // Merge dim d into the (already merged) dim after it when every input walks them as one.
  std::vector<std::int64_t> dims;
  std::array<std::vector<std::int64_t>, kMaxInputs> merged;
  for (int d = rank - 1; d >= 0; --d) {
    std::int64_t size = out[d];
    if (size == 1) continue;  // size-1 dims do not move any index
    bool can_merge = !dims.empty();
    for (int k = 0; k < inputs_ && can_merge; ++k) {
      auto& m = merged[static_cast<std::size_t>(k)];
      can_merge = strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)] == m.back() * dims.back();
    }
    if (can_merge) {
      dims.back() *= size;
    } else {
      dims.push_back(size);
      for (int k = 0; k < inputs_; ++k) {
        merged[static_cast<std::size_t>(k)].push_back(
            strides[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)]);
      }
    }
  }
  // dims/merged are innermost-first; the innermost becomes the run.
  if (!dims.empty()) {
    run_length_ = dims.front();
    for (int k = 0; k < inputs_; ++k)
      inner_stride_[static_cast<std::size_t>(k)] = merged[static_cast<std::size_t>(k)].front();
  }
  for (std::size_t d = dims.size(); d-- > 1;) {
    outer_dims_.push_back(dims[d]);
    for (int k = 0; k < inputs_; ++k)
      outer_strides_[static_cast<std::size_t>(k)].push_back(merged[static_cast<std::size_t>(k)][d]);
  }
  runs_ = 1;
  for (std::int64_t d : outer_dims_) runs_ *= d;
}

std::array<std::int64_t, BroadcastIndexer::kMaxInputs> BroadcastIndexer::input_offsets(std::int64_t run) const {
  std::array<std::int64_t, kMaxInputs> offsets{};
  for (std::size_t d = outer_dims_.size(); d-- > 0;) {
    std::int64_t index = run % outer_dims_[d];
    run /= outer_dims_[d];
    for (int k = 0; k < inputs_; ++k)
      offsets[static_cast<std::size_t>(k)] += index * outer_strides_[static_cast<std::size_t>(k)][d];
  }
  return offsets;
}

}  // namespace kestrel::kernels
