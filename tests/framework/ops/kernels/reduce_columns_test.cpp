// kernels::CpuKernels::reduce over a middle axis (columns: a bias gradient sums [rows, n] over its
// rows), which runs in blocks of columns on the pool's threads: each column summed in row order,
// bit for bit, whatever the number of threads, at the level the process runs at
// (framework_ops_test runs once per CPU level the machine has).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "tests/framework/ops/kernels/wide_range_values.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

// [outer, length, inner] reduced over its middle axis, each column in row order.
std::vector<float> in_row_order(const std::vector<float>& x, std::int64_t outer, std::int64_t length,
                                std::int64_t inner, Reduction r) {
  std::vector<float> out;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      float acc = r == Reduction::sum ? 0.0f : -INFINITY;
      for (std::int64_t l = 0; l < length; ++l) {
        const float v = x[static_cast<std::size_t>((o * length + l) * inner + i)];
        acc = r == Reduction::sum ? acc + v : std::max(acc, v);
      }
      out.push_back(acc);
    }
  }
  return out;
}

TEST(ReduceColumns, EachColumnInRowOrderWhateverTheThreads) {
  struct Case {
    std::int64_t outer, length, inner;
  };
  // A bias gradient of BERT-tiny's width; widths that end in a partial block or fit in less than
  // one; several outer slices; a single row.
  for (const Case c : {Case{1, 4096, 128}, Case{1, 1000, 200}, Case{3, 517, 70}, Case{5, 9, 13}, Case{2, 1, 64}}) {
    const std::vector<float> values = wide_range_floats(c.outer * c.length * c.inner, 7);
    const Tensor x = Tensor::from_vector<float>(values, {c.outer, c.length, c.inner});
    for (const Reduction r : {Reduction::sum, Reduction::max}) {
      const std::vector<float> want = in_row_order(values, c.outer, c.length, c.inner, r);
      for (const int threads : {1, 2, 3}) {
        SCOPED_TRACE(std::to_string(c.outer) + " x " + std::to_string(c.length) + " x " + std::to_string(c.inner) +
                     (r == Reduction::sum ? ", sum" : ", max") + ", threads " + std::to_string(threads));
        const testing::ThreadCountGuard guard(threads);
        const Tensor got = Tensor::empty({c.outer, 1, c.inner}, DType::float32);
        cpu().reduce(x.view(), got.view(), std::vector<int>{1}, r);
        ASSERT_EQ(got.nbytes(), want.size() * sizeof(float));
        EXPECT_EQ(std::memcmp(got.raw_data(), want.data(), got.nbytes()), 0);
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels
