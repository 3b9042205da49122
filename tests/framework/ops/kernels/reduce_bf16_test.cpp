// kernels::CpuKernels::reduce on bfloat16 against widening the input whole, the float32 reduction
// and rounding once (what the executor did before the kernel read bfloat16): the same bits, before
// rounding (a float32 output) and after, for sum and max, over the last axis (rows), a middle axis (columns), several runs of axes and none,
// at every CPU level the machine has.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "tests/framework/ops/kernels/wide_range_values.h"
#include "tests/support/cpu_levels.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

// wide_range_floats rounded to bfloat16.
Tensor wide_range_bf16(const Shape& shape, unsigned seed) {
  Tensor out = Tensor::empty(shape, DType::bfloat16);
  cpu().convert(Tensor::from_vector<float>(wide_range_floats(shape.numel(), seed), shape).view(), out.view());
  return out;
}

Shape reduced(const Shape& shape, const std::vector<int>& axes) {
  Shape out = shape;
  for (int a : axes) out[a] = 1;
  return out;
}

TEST(ReduceBf16, TheBitsOfWideningReducingAndRoundingAtEveryLevel) {
  const testing::ThreadCountGuard threads(2);
  const Shape shape{6, 33, 130};
  const Tensor x = wide_range_bf16(shape, 3);
  const std::vector<std::vector<int>> axes_cases{{2}, {1}, {0, 2}, {0, 1, 2}, {}};
  for (const CpuCapability level : testing::runnable_cpu_levels()) {
    const CpuKernels& k = cpu_kernels_at(level);
    for (const Reduction r : {Reduction::sum, Reduction::max}) {
      for (const std::vector<int>& axes : axes_cases) {
        SCOPED_TRACE("level " + std::to_string(static_cast<int>(level)) + ", axes " + std::to_string(axes.size()) +
                     (axes.empty() ? "" : " from " + std::to_string(axes[0])) +
                     (r == Reduction::sum ? ", sum" : ", max"));
        const Shape out_shape = reduced(shape, axes);
        const Tensor wide = Tensor::empty(shape, DType::float32);
        k.convert(x.view(), wide.view());
        const Tensor wide_out = Tensor::empty(out_shape, DType::float32);
        k.reduce(wide.view(), wide_out.view(), axes, r);
        const Tensor want = Tensor::empty(out_shape, DType::bfloat16);
        k.convert(wide_out.view(), want.view());
        const Tensor got = Tensor::empty(out_shape, DType::bfloat16);
        k.reduce(x.view(), got.view(), axes, r);
        EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
        // Before rounding, where a different order of adds would show: the float32 sums.
        const Tensor got_wide = Tensor::empty(out_shape, DType::float32);
        k.reduce(x.view(), got_wide.view(), axes, r);
        EXPECT_EQ(std::memcmp(got_wide.raw_data(), wide_out.raw_data(), got_wide.nbytes()), 0);
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels
