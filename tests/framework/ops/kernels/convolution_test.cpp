// kernels::convolution_* (oneDNN's direct convolution): the images split into runs by
// num_threads() alone, so the bits are the same whichever threads run them, replicas included.
// Values against naive references are the op table's (conv_cases.cpp).
#include "framework/ops/kernels/convolution.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "framework/core/thread_pool.h"
#include "tests/framework/ops/kernels/replica_threads.h"
#include "tests/support/same_bits.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::same_bits;

// 16 images of 28x28x3 and 16 3x3 filters: enough work for two runs.
const ConvShape kShape = {
    .batch = 16, .in_h = 28, .in_w = 28, .in_c = 3, .k_h = 3, .k_w = 3, .out_c = 16, .out_h = 26, .out_w = 26};

std::vector<float> random_floats(std::int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> out(static_cast<std::size_t>(count));
  for (float& v : out) v = uniform(rng);
  return out;
}

struct Results {
  std::vector<float> y, dw;
};

Results convolve(bool serial_scope) {
  const std::vector<float> x = random_floats(kShape.batch * kShape.in_h * kShape.in_w * kShape.in_c, 1);
  const std::vector<float> w = random_floats(kShape.k_h * kShape.k_w * kShape.in_c * kShape.out_c, 2);
  const std::vector<float> dy = random_floats(kShape.batch * kShape.out_h * kShape.out_w * kShape.out_c, 3);
  Results r{std::vector<float>(dy.size()), std::vector<float>(w.size())};
  auto run = [&] {
    convolution_forward(kShape, x.data(), w.data(), r.y.data());
    convolution_backward_weights(kShape, x.data(), dy.data(), r.dw.data());
  };
  if (serial_scope) {
    SerialKernelsScope serial;
    run();
  } else {
    run();
  }
  return r;
}

TEST(Convolution, TheSameBitsWhereverTheRunsExecute) {
  const int saved = num_threads();
  set_num_threads(2);
  const Results pooled = convolve(false);
  const Results serial = convolve(true);
  EXPECT_TRUE(same_bits(serial.y, pooled.y)) << "forward under a SerialKernelsScope";
  EXPECT_TRUE(same_bits(serial.dw, pooled.dw)) << "filter gradient under a SerialKernelsScope";
  for (const Results& r : testing::on_replica_threads(4, [] { return convolve(true); })) {
    EXPECT_TRUE(same_bits(r.y, pooled.y)) << "forward on a replica thread";
    EXPECT_TRUE(same_bits(r.dw, pooled.dw)) << "filter gradient on a replica thread";
  }
  set_num_threads(saved);
}

}  // namespace
}  // namespace kestrel::kernels
