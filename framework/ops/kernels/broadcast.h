// Iteration over the output of a NumPy broadcast of up to three inputs (internal to kernels).
//
//   BroadcastIndexer ix(out.shape, {a.shape, b.shape});
//   for (std::int64_t run = 0; run < ix.runs(); ++run) {
//     auto base = ix.input_offsets(run);           // where this run starts in each input
//     for (std::int64_t k = 0; k < ix.run_length(); ++k)
//       o[run * ix.run_length() + k] = pa[base[0] + k * ix.inner_stride(0)] + pb[base[1] + k * ix.inner_stride(1)];
//   }
//
// Adjacent dims that broadcast alike are merged first, so [N,H,W,C] + [C] is N*H*W runs of C.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "framework/core/shape.h"

namespace kestrel::kernels {

class BroadcastIndexer {
 public:
  static constexpr int kMaxInputs = 3;

  BroadcastIndexer(const Shape& out, std::initializer_list<Shape> inputs);

  /// Elements per run: the merged innermost output dim.
  std::int64_t run_length() const { return run_length_; }
  /// Number of runs: output elements / run_length.
  std::int64_t runs() const { return runs_; }
  /// 1 when input i advances along the run, 0 when it is broadcast along it.
  std::int64_t inner_stride(int i) const { return inner_stride_[static_cast<std::size_t>(i)]; }
  /// Offset of each input's first element in the given run.
  std::array<std::int64_t, kMaxInputs> input_offsets(std::int64_t run) const;

 private:
  int inputs_ = 0;
  std::int64_t run_length_ = 1;
  std::int64_t runs_ = 1;
  std::array<std::int64_t, kMaxInputs> inner_stride_{};
  std::vector<std::int64_t> outer_dims_;                             // merged dims before the run
  std::array<std::vector<std::int64_t>, kMaxInputs> outer_strides_;  // per input, 0 where broadcast
};

}  // namespace kestrel::kernels
