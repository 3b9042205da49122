// layer_norm's backward pass through layer_norm_backprop and layer_norm_gamma_backprop: it must
// agree with the gradient written op by op with the public ops, keep bfloat16 dtypes, name itself
// in errors, and refuse to be differentiated again rather than yield a silently wrong second
// derivative.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "tests/support/error_message.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

struct LayerNormGrads {
  Tensor dx, dgamma, dbeta;
};

// The gradient of layer_norm written with the public ops, one full pass per op.
LayerNormGrads op_by_op_grads(const Tensor& x, const Tensor& gamma, const Tensor& g, double epsilon) {
  const ops::ReduceOptions last{.axes = {-1}, .keepdims = true};
  Tensor centered = x - ops::mean(x, last);
  Tensor rstd = ops::rsqrt(ops::mean(ops::square(centered), last) + epsilon);
  Tensor xhat = centered * rstd;
  Tensor gg = g * gamma;
  Tensor dx = rstd * (gg - ops::mean(gg, last) - xhat * ops::mean(gg * xhat, last));
  return {dx, ops::sum_to(g * xhat, gamma.shape()), ops::sum_to(g, gamma.shape())};
}

LayerNormGrads autodiff_grads(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& g,
                              double epsilon) {
  auto f = [epsilon](const std::vector<Tensor>& a) { return ops::layer_norm(a[0], a[1], a[2], {.epsilon = epsilon}); };
  auto [y, grads] = value_and_grad(f, {x, gamma, beta}, g);
  return {grads[0], grads[1], grads[2]};
}

void expect_close(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<double> a = got.to_vector<double>();
  std::vector<double> b = want.to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_LE(std::fabs(a[i] - b[i]) / (1.0 + std::fabs(b[i])), tolerance)
        << what << " element " << i << ": got " << a[i] << ", want " << b[i];
  }
}

TEST(LayerNormBackprop, MatchesTheOpByOpGradient) {
  // 8 * 40 * 96 elements: enough rows for the kernel to split them over threads.
  struct Case {
    const char* name;
    Shape shape;
    double lo, hi, epsilon;
  };
  for (const Case& c : {Case{"centered", {8, 40, 96}, -2, 2, 1e-5}, Case{"large_mean", {6, 128}, 40, 44, 1e-12},
                        Case{"bert_epsilon", {3, 5, 128}, -1, 1, 1e-12}, Case{"single_column", {4, 1}, -1, 1, 1e-3}}) {
    const std::int64_t d = c.shape[-1];
    Tensor x = random::uniform(c.shape, random::Key(21), c.lo, c.hi);
    Tensor gamma = random::uniform({d}, random::Key(22), -1.5, 1.5);
    Tensor beta = random::uniform({d}, random::Key(23), -0.5, 0.5);
    Tensor g = random::uniform(c.shape, random::Key(24), -1, 1);
    LayerNormGrads want = op_by_op_grads(x, gamma, g, c.epsilon);
    LayerNormGrads got = autodiff_grads(x, gamma, beta, g, c.epsilon);
    expect_close(got.dx, want.dx, 1e-5, std::string(c.name) + " dx");
    expect_close(got.dgamma, want.dgamma, 1e-5, std::string(c.name) + " dgamma");
    expect_close(got.dbeta, want.dbeta, 1e-6, std::string(c.name) + " dbeta");
    expect_close(ops::layer_norm_backprop(x, gamma, g, {.epsilon = c.epsilon}), want.dx, 1e-5,
                 std::string(c.name) + " layer_norm_backprop");
  }
}

TEST(LayerNormBackprop, Bfloat16InputsGiveABfloat16Gradient) {
  Tensor x = random::uniform({4, 32}, random::Key(31), -2, 2);
  Tensor gamma = random::uniform({32}, random::Key(32), 0.5, 1.5);
  Tensor g = random::uniform({4, 32}, random::Key(33), -1, 1);
  Tensor x16 = ops::cast(x, DType::bfloat16);
  Tensor g16 = ops::cast(g, DType::bfloat16);
  Tensor dx16 = ops::layer_norm_backprop(x16, gamma, g16);
  EXPECT_EQ(dx16.dtype(), DType::bfloat16);
  // Computed in float32 from the bfloat16 inputs, then rounded once.
  Tensor want = ops::layer_norm_backprop(ops::cast(x16, DType::float32), gamma, ops::cast(g16, DType::float32));
  expect_close(dx16, want, 1e-2, "bfloat16 dx");
}

// dgamma's blocks of rows are fixed, and their partial sums added in order: one thread or two,
// float32 or bfloat16 operands widened exactly, the sums are the same; in bfloat16 the result
// is the float32 one rounded once.
TEST(LayerNormBackprop, GammaGradientBitsDependOnNeitherThreadsNorDtype) {
  const Tensor x = ops::cast(random::uniform({4, 100, 48}, random::Key(34), -2, 2), DType::bfloat16);
  const Tensor g = ops::cast(random::uniform({4, 100, 48}, random::Key(35), -1, 1), DType::bfloat16);
  const Tensor wide_x = ops::cast(x, DType::float32), wide_g = ops::cast(g, DType::float32);
  Tensor two_threads, one_thread;
  {
    testing::ThreadCountGuard threads(2);
    two_threads = ops::layer_norm_gamma_backprop(wide_x, wide_g);
  }
  {
    testing::ThreadCountGuard threads(1);
    one_thread = ops::layer_norm_gamma_backprop(wide_x, wide_g);
  }
  EXPECT_EQ(two_threads.to_vector<float>(), one_thread.to_vector<float>());
  const Tensor narrow = ops::layer_norm_gamma_backprop(x, g);
  ASSERT_EQ(narrow.spec(), (TensorSpec{Shape{48}, DType::bfloat16}));
  EXPECT_EQ(ops::cast(narrow, DType::float32).to_vector<float>(),
            ops::cast(ops::cast(two_threads, DType::bfloat16), DType::float32).to_vector<float>());
}

TEST(LayerNormBackprop, EmptyInputGivesAnEmptyGradient) {
  Tensor dx = ops::layer_norm_backprop(Tensor::zeros({0, 4}), Tensor::ones({4}), Tensor::zeros({0, 4}));
  EXPECT_EQ(dx.shape(), (Shape{0, 4}));
}

TEST(LayerNormBackpropErrors, NameTheOp) {
  std::string m = error_message<ShapeError>([] {
    ops::layer_norm_backprop(Tensor::zeros({2, 4}), Tensor::ones({4}), Tensor::zeros({2, 5}));
  });
  EXPECT_TRUE(contains(m, "[layer_norm_backprop] x is [2,4] and dy is [2,5]")) << m;
  m = error_message<ShapeError>([] {
    ops::layer_norm_backprop(Tensor::zeros({2, 4}), Tensor::ones({3}), Tensor::zeros({2, 4}));
  });
  EXPECT_TRUE(contains(m, "[layer_norm_backprop] x is [2,4] and gamma is [3]")) << m;
  m = error_message<TypeError>([] {
    ops::layer_norm_backprop(Tensor::zeros({2, 4}), Tensor::ones({4}), Tensor::zeros({2, 4}, DType::int32));
  });
  EXPECT_TRUE(contains(m, "[layer_norm_backprop] dy is int32[2,4]")) << m;
  m = error_message<ValueError>([] {
    ops::layer_norm_backprop(Tensor::zeros({2, 4}), Tensor::ones({4}), Tensor::zeros({2, 4}), {.epsilon = -1});
  });
  EXPECT_TRUE(contains(m, "[layer_norm_backprop] epsilon is -1")) << m;
  m = error_message<ShapeError>([] { ops::layer_norm_gamma_backprop(Tensor::zeros({2, 4}), Tensor::zeros({2, 5})); });
  EXPECT_TRUE(contains(m, "[layer_norm_gamma_backprop] x is [2,4] and dy is [2,5]")) << m;
}

TEST(LayerNormBackpropErrors, ASecondDerivativeThroughLayerNormThrows) {
  Tensor x = random::uniform({2, 4}, random::Key(41), -1, 1);
  auto gradient_norm = [](const std::vector<Tensor>& outer) {
    auto inner = grad(
        [](const std::vector<Tensor>& v) {
          return ops::sum(ops::square(ops::layer_norm(v[0], Tensor::ones({4}), Tensor::zeros({4}))));
        },
        {outer[0]});
    return ops::sum(ops::square(inner[0]));
  };
  std::string m = error_message<ValueError>([&] { grad(gradient_norm, {x}); });
  EXPECT_TRUE(contains(m, "[layer_norm_backprop] is not differentiable")) << m;
}

}  // namespace
}  // namespace kestrel
