// sparse_softmax_cross_entropy's backward pass through sparse_softmax_cross_entropy_backprop: it
// must equal, bit for bit, the gradient written op by op with the public ops (softmax, one_hot,
// subtract, multiply), zero ignored rows whatever their cotangent, keep bfloat16 dtypes (a float32
// loss of bfloat16 logits, and their gradient in bfloat16), name
// itself in errors, and leave the loss twice differentiable.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/autodiff/value_and_grad.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

// (softmax(logits) - one_hot(labels)) * dloss with the public ops, one full pass per op.
Tensor op_by_op_gradient(const Tensor& logits, const Tensor& labels, const Tensor& dloss, std::int64_t ignore_index) {
  Tensor counted = ops::not_equal(labels, Tensor::from_vector<std::int64_t>({ignore_index}, Shape{}));
  Tensor g = ops::where(counted, dloss, ops::scalar_like(dloss, 0.0));
  Tensor target = ops::one_hot(labels, logits.shape()[-1], {.dtype = logits.dtype()});
  return ops::multiply(ops::subtract(ops::softmax(logits, -1), target), ops::expand_dims(g, -1));
}

// Labels in [0, classes), every third one ignore_index.
Tensor some_ignored_labels(std::int64_t rows, std::int64_t classes, std::int64_t ignore_index) {
  std::vector<std::int64_t> labels = random::randint({rows}, random::Key(3), 0, classes).to_vector<std::int64_t>();
  for (std::size_t r = 0; r < labels.size(); r += 3) labels[r] = ignore_index;
  return Tensor::from_vector<std::int64_t>(labels, {rows});
}

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.spec(), want.spec()) << what;
  std::vector<float> a = got.to_vector<float>();
  std::vector<float> b = want.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " element " << i;
}

TEST(CrossEntropyBackprop, EqualsTheOpByOpGradientBitForBit) {
  // 96 rows of 2000 classes: enough rows for the kernel to split them over threads.
  Tensor logits = random::normal({96, 2000}, random::Key(1), 0.0, 3.0);
  Tensor dloss = random::uniform({96}, random::Key(2), -1, 1);
  Tensor labels = some_ignored_labels(96, 2000, -100);
  Tensor want = op_by_op_gradient(logits, labels, dloss, -100);
  expect_equal(ops::sparse_softmax_cross_entropy_backprop(logits, labels, dloss), want, "int64 labels");
  expect_equal(ops::sparse_softmax_cross_entropy_backprop(logits, ops::cast(labels, DType::int32), dloss), want,
               "int32 labels");
}

TEST(CrossEntropyBackprop, IsTheLossGradient) {
  Tensor logits = random::normal({4, 3, 7}, random::Key(4));
  Tensor labels = ops::reshape(some_ignored_labels(12, 7, 5), {4, 3});
  Tensor dloss = random::uniform({4, 3}, random::Key(5), -1, 1);
  auto loss = [&](const std::vector<Tensor>& a) {
    return ops::sparse_softmax_cross_entropy(a[0], labels, {.ignore_index = 5});
  };
  auto [value, grads] = value_and_grad(loss, {logits}, dloss);
  expect_equal(grads[0], ops::sparse_softmax_cross_entropy_backprop(logits, labels, dloss, {.ignore_index = 5}),
               "autodiff");
}

TEST(CrossEntropyBackprop, IgnoredRowsAreZeroWhateverTheirCotangent) {
  Tensor logits = random::normal({3, 4}, random::Key(6));
  Tensor labels = Tensor::from_vector<std::int64_t>({-100, 2, -100}, {3});
  const float inf = std::numeric_limits<float>::infinity();
  Tensor dloss = Tensor::from_vector<float>({inf, 1.0f, std::nanf("")}, {3});
  std::vector<float> d = ops::sparse_softmax_cross_entropy_backprop(logits, labels, dloss).to_vector<float>();
  for (std::size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(d[c], 0.0f) << "row 0, class " << c;
    EXPECT_EQ(d[8 + c], 0.0f) << "row 2, class " << c;
  }
}

TEST(CrossEntropyBackprop, KeepsBfloat16) {
  Tensor logits = ops::cast(random::normal({5, 6}, random::Key(7)), DType::bfloat16);
  Tensor dloss = ops::cast(random::uniform({5}, random::Key(8), -1, 1), DType::bfloat16);
  Tensor labels = Tensor::from_vector<std::int64_t>({0, 5, -100, 3, 1}, {5});
  Tensor d = ops::sparse_softmax_cross_entropy_backprop(logits, labels, dloss);
  Tensor want = ops::sparse_softmax_cross_entropy_backprop(ops::cast(logits, DType::float32), labels,
                                                           ops::cast(dloss, DType::float32));
  expect_equal(d, ops::cast(want, DType::bfloat16), "bfloat16");
}

// bfloat16 logits are read as their float32 values, a block of rows at a time (many short rows
// to a block, or one long row): the loss is float32 and equals the float32 loss bit for bit, and
// the gradient is the float32 gradient rounded once, from a float32 or a bfloat16 dloss.
TEST(CrossEntropyBackprop, Bfloat16LogitsGiveTheFloat32LossAndTheRoundedGradient) {
  for (const auto& [rows, classes] : {std::pair<std::int64_t, std::int64_t>{700, 5}, {3, 6000}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(classes));
    const Tensor logits = ops::cast(random::normal({rows, classes}, random::Key(10), 0.0, 3.0), DType::bfloat16);
    const Tensor wide = ops::cast(logits, DType::float32);
    const Tensor labels = some_ignored_labels(rows, classes, -100);
    const Tensor loss = ops::sparse_softmax_cross_entropy(logits, labels);
    expect_equal(loss, ops::sparse_softmax_cross_entropy(wide, labels), "loss");
    const Tensor dloss = random::uniform({rows}, random::Key(11), -1, 1);
    const Tensor want = ops::cast(ops::sparse_softmax_cross_entropy_backprop(wide, labels, dloss), DType::bfloat16);
    expect_equal(ops::sparse_softmax_cross_entropy_backprop(logits, labels, dloss), want, "float32 dloss");
    const Tensor narrow_dloss = ops::cast(dloss, DType::bfloat16);
    expect_equal(
        ops::sparse_softmax_cross_entropy_backprop(logits, labels, narrow_dloss),
        ops::cast(ops::sparse_softmax_cross_entropy_backprop(wide, labels, ops::cast(narrow_dloss, DType::float32)),
                  DType::bfloat16),
        "bfloat16 dloss");
  }
}

TEST(CrossEntropyBackprop, TheLossIsTwiceDifferentiable) {
  // The gradient of sum(dlogits^2) goes through the backprop op's own gradient.
  Tensor labels = Tensor::from_vector<std::int64_t>({4, -100, 1}, {3});
  auto gradient_norm = [&](const std::vector<Tensor>& outer) {
    auto inner =
        grad([&](const std::vector<Tensor>& v) { return ops::sum(ops::sparse_softmax_cross_entropy(v[0], labels)); },
             {outer[0]});
    return ops::sum(ops::square(inner[0]));
  };
  GradcheckResult r = gradcheck(gradient_norm, {random::normal({3, 5}, random::Key(9))});
  EXPECT_TRUE(r.ok) << r.report;
}

TEST(CrossEntropyBackpropErrors, NameTheOp) {
  Tensor logits = Tensor::zeros({2, 4});
  Tensor labels = Tensor::from_vector<std::int64_t>({1, 2}, {2});
  std::string m = error_message<ShapeError>(
      [&] { ops::sparse_softmax_cross_entropy_backprop(logits, labels, Tensor::zeros({3})); });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy_backprop] logits are float32[2,4] and dloss is float32[3]"))
      << m;
  m = error_message<TypeError>(
      [&] { ops::sparse_softmax_cross_entropy_backprop(logits, labels, Tensor::zeros({2}, DType::int32)); });
  EXPECT_TRUE(contains(m, "and dloss is int32[2]; dloss must be [2] (the loss's shape), float32 or bfloat16")) << m;
  m = error_message<IndexError>([&] {
    ops::sparse_softmax_cross_entropy_backprop(logits, Tensor::from_vector<std::int64_t>({1, 4}, {2}),
                                               Tensor::zeros({2}));
  });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy_backprop] labels[1] is 4, outside [0, 4)")) << m;
  m = error_message<TypeError>(
      [&] { ops::sparse_softmax_cross_entropy_backprop(logits, Tensor::zeros({2}), Tensor::zeros({2})); });
  EXPECT_TRUE(contains(m, "[sparse_softmax_cross_entropy_backprop] labels are float32[2]")) << m;
}

}  // namespace
}  // namespace kestrel
