// Op table entries for argmax: the index of the first maximum along an axis, as int64.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "tests/framework/ops/op_case.h"
#include "tests/support/error_message.h"

namespace kestrel::testing {
namespace {

/// Naive argmax: for every output element, scan the axis and keep the first strictly larger value.
Tensor argmax_reference(const Tensor& x, int axis) {
  const Shape& shape = x.shape();
  if (axis < 0) axis += shape.rank();
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (int d = axis + 1; d < shape.rank(); ++d) inner *= shape[d];
  const std::int64_t length = shape[axis];
  std::vector<double> v = x.to_vector<double>();
  std::vector<std::int64_t> out;
  Shape out_shape;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d != axis) out_shape.push_back(shape[d]);
  }
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t best = 0;
      for (std::int64_t l = 1; l < length; ++l) {
        if (v[static_cast<std::size_t>((o * length + l) * inner + i)] >
            v[static_cast<std::size_t>((o * length + best) * inner + i)]) {
          best = l;
        }
      }
      out.push_back(best);
    }
  }
  return Tensor::from_vector<std::int64_t>(out, out_shape);
}

OpCase argmax_case(std::string label, std::function<Inputs()> make_inputs, int axis) {
  OpCase c;
  c.op = OpId::argmax;
  c.label = std::move(label);
  c.make_inputs = std::move(make_inputs);
  c.run = [axis](const Inputs& x) { return ops::argmax(x[0], axis); };
  c.reference = [axis](const Inputs& x) { return argmax_reference(x[0], axis); };
  c.no_gradient_because = "integer output";
  return c;
}

std::vector<OpCase> argmax_cases() {
  std::vector<OpCase> cases;
  cases.push_back(argmax_case(
      "argmax_last_axis",
      [] {
        return Inputs{uniform_tensor({4, 7}, 31)};
      },
      -1));
  cases.push_back(argmax_case(
      "argmax_middle_axis",
      [] {
        return Inputs{uniform_tensor({2, 5, 3}, 32)};
      },
      1));
  cases.push_back(argmax_case(
      "argmax_leading_axis",
      [] {
        return Inputs{uniform_tensor({6, 4}, 33)};
      },
      0));
  // Ties: the first maximum wins, in every row.
  cases.push_back(argmax_case(
      "argmax_ties_pick_first",
      [] {
        return Inputs{Tensor::from_vector<float>({1, 3, 3, 0, 2, 2, 2, 2, -1, -1, -5, -1}, {3, 4})};
      },
      -1));
  cases.push_back(argmax_case(
      "argmax_int32",
      [] {
        return Inputs{Tensor::from_vector<std::int32_t>({4, 9, 9, -2, 7, 1}, {2, 3})};
      },
      1));
  return cases;
}

KESTREL_REGISTER_OP_CASES(argmax_cases);

TEST(Argmax, NaNCountsAsTheLargestAndBfloat16IsWidened) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, nan, 5, nan, 2, 3}, {2, 3});
  EXPECT_EQ(ops::argmax(x).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
  Tensor b = ops::cast(Tensor::from_vector<float>({0.5f, 2, -1, 7}, {2, 2}), DType::bfloat16);
  EXPECT_EQ(ops::argmax(b).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ops::argmax(b).dtype(), DType::int64);
}

TEST(Argmax, NothingFlowsBackThroughTheIndices) {
  Tensor x = Tensor::from_vector<float>({1, 4, 2}, {3});
  GradientTape tape;
  tape.watch(x);
  Tensor index = ops::argmax(x);
  EXPECT_FALSE(index.requires_grad());
  EXPECT_EQ(index.grad_record(), nullptr);
}

TEST(Argmax, ErrorsNameTheOpAndTheInput) {
  std::string m = error_message<ShapeError>([] { ops::argmax(Tensor::scalar(1.0)); });
  EXPECT_TRUE(contains(m, "[argmax]")) << m;
  m = error_message<ShapeError>([] { ops::argmax(Tensor::zeros({2, 3}), 2); });
  EXPECT_TRUE(contains(m, "argmax")) << m;
  m = error_message<ShapeError>([] { ops::argmax(Tensor::zeros({2, 0}), -1); });
  EXPECT_TRUE(contains(m, "[argmax] x is float32[2,0]")) << m;
  m = error_message<TypeError>([] { ops::argmax(Tensor::zeros({2}, DType::bool_)); });
  EXPECT_TRUE(contains(m, "[argmax]")) << m;
}

}  // namespace
}  // namespace kestrel::testing
