// Error messages of the shape and indexing ops, and the behaviour the op table cannot see:
// reshape's buffer sharing, its kernel as a compiled program would run it, and scatter_add's
// determinism across thread counts.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/primitive.h"
#include "framework/ops/shape_ops.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

Tensor x_2x3() { return Tensor::zeros({2, 3}); }

TEST(ReshapeErrors, WrongElementCountShowsBothShapes) {
  std::string m = error_message<ShapeError>([] { ops::reshape(x_2x3(), {4, 2}); });
  EXPECT_TRUE(contains(m, "[reshape] cannot reshape float32[2,3] (6 elements) to [4,2] (8 elements)")) << m;
}

TEST(ReshapeErrors, TwoMinusOnesAreRejected) {
  std::string m = error_message<ValueError>([] { ops::reshape(x_2x3(), {-1, -1}); });
  EXPECT_TRUE(contains(m, "[reshape] shape [-1,-1] has more than one -1")) << m;
}

TEST(ReshapeErrors, MinusOneThatCannotBeInferred) {
  std::string m = error_message<ShapeError>([] { ops::reshape(x_2x3(), {4, -1}); });
  EXPECT_TRUE(contains(m, "[reshape] cannot reshape float32[2,3] (6 elements) to [4,-1]")) << m;
  EXPECT_TRUE(contains(m, "does not divide 6")) << m;
}

TEST(ReshapeErrors, NegativeDimOtherThanMinusOne) {
  std::string m = error_message<ValueError>([] { ops::reshape(x_2x3(), {-2, 3}); });
  EXPECT_TRUE(contains(m, "[reshape] shape [-2,3] has dim -2")) << m;
}

TEST(ReshapeErrors, SqueezeOfANonUnitAxis) {
  std::string m = error_message<ShapeError>([] { ops::squeeze(x_2x3(), {1}); });
  EXPECT_TRUE(contains(m, "[squeeze] cannot squeeze axis 1 of float32[2,3]: its size is 3, not 1")) << m;
}

TEST(ReshapeErrors, ExpandDimsAxisOutOfRange) {
  std::string m = error_message<ShapeError>([] { ops::expand_dims(x_2x3(), 4); });
  EXPECT_TRUE(contains(m, "[expand_dims] axis 4 is out of range")) << m;
}

TEST(BroadcastToErrors, IncompatibleDimNamesAxisAndSizes) {
  std::string m = error_message<ShapeError>([] { ops::broadcast_to(Tensor::zeros({3, 4}), {2, 5, 4}); });
  EXPECT_TRUE(contains(m, "[broadcast_to] cannot broadcast float32[3,4] to [2,5,4]")) << m;
  EXPECT_TRUE(contains(m, "axis 0 of x has size 3 but the target has 5")) << m;
}

TEST(BroadcastToErrors, TargetWithFewerAxes) {
  std::string m = error_message<ShapeError>([] { ops::broadcast_to(Tensor::zeros({2, 3}), {3}); });
  EXPECT_TRUE(contains(m, "[broadcast_to] cannot broadcast float32[2,3] to [3]")) << m;
}

TEST(TransposeErrors, RepeatedAxisIsNotAPermutation) {
  std::string m = error_message<ValueError>([] { ops::transpose(Tensor::zeros({2, 3, 4}), {0, 0, 1}); });
  EXPECT_TRUE(contains(m, "[transpose] perm [0,0,1] is not a permutation of [0, 3)")) << m;
  EXPECT_TRUE(contains(m, "float32[2,3,4]")) << m;
}

TEST(TransposeErrors, AxisOutOfRange) {
  std::string m = error_message<ValueError>([] { ops::transpose(x_2x3(), {0, 2}); });
  EXPECT_TRUE(contains(m, "[transpose] perm [0,2] is not a permutation of [0, 2)")) << m;
}

TEST(TransposeErrors, PermLengthMustMatchRank) {
  std::string m = error_message<ShapeError>([] { ops::transpose(x_2x3(), {1, 0, 2}); });
  EXPECT_TRUE(contains(m, "[transpose] perm [1,0,2] has 3 entries but x is float32[2,3] (rank 2)")) << m;
}

TEST(SliceErrors, PastTheEndOfAnAxis) {
  std::string m = error_message<IndexError>([] { ops::slice(x_2x3(), {0, 2}, {2, 4}); });
  EXPECT_TRUE(contains(m, "[slice] begin[1] + size[1] = 2 + 4 = 6 exceeds axis 1 of x float32[2,3] (size 3)")) << m;
}

TEST(SliceErrors, BeginOutsideTheAxis) {
  std::string m = error_message<IndexError>([] { ops::slice(x_2x3(), {-1, 0}, {1, 1}); });
  EXPECT_TRUE(contains(m, "[slice] begin[0] = -1 is out of range for x float32[2,3]")) << m;
  EXPECT_TRUE(contains(m, "[0, 2]")) << m;
}

TEST(SliceErrors, BeginAndSizeNeedOneEntryPerAxis) {
  std::string m = error_message<ShapeError>([] { ops::slice(x_2x3(), {0}, {1}); });
  EXPECT_TRUE(contains(m, "[slice] x is float32[2,3] but begin is [0] and size is [1]")) << m;
}

TEST(ConcatErrors, MismatchedDimNamesInputsAndAxis) {
  std::string m = error_message<ShapeError>([] { ops::concat({Tensor::zeros({2, 3}), Tensor::zeros({3, 4})}, 0); });
  EXPECT_TRUE(contains(m, "[concat] xs[1] is float32[3,4] but xs[0] is float32[2,3]: dim 1 differs (4 vs 3)")) << m;
  EXPECT_TRUE(contains(m, "except the concat axis 0")) << m;
}

TEST(ConcatErrors, MismatchedDtypes) {
  std::string m = error_message<TypeError>([] {
    ops::concat({Tensor::zeros({2, 3}), Tensor::zeros({2, 3}, DType::int32)}, 1);
  });
  EXPECT_TRUE(contains(m, "[concat] xs[1] is int32[2,3] but xs[0] is float32[2,3]")) << m;
  EXPECT_TRUE(contains(m, "ops::cast")) << m;
}

TEST(ConcatErrors, MismatchedRanksAndEmptyInput) {
  std::string m = error_message<ShapeError>([] { ops::concat({Tensor::zeros({2, 3}), Tensor::zeros({2, 3, 1})}, 0); });
  EXPECT_TRUE(contains(m, "ranks differ")) << m;
  m = error_message<ValueError>([] { ops::concat({}, 0); });
  EXPECT_TRUE(contains(m, "[concat] xs is empty")) << m;
}

TEST(PadErrors, NegativePaddingAndWrongPairCount) {
  std::string m = error_message<ValueError>([] { ops::pad(x_2x3(), {{0, 0}, {-1, 2}}); });
  EXPECT_TRUE(contains(m, "[pad] paddings [(0, 0), (-1, 2)] has a negative entry on axis 1")) << m;
  m = error_message<ShapeError>([] { ops::pad(x_2x3(), {{1, 1}}); });
  EXPECT_TRUE(contains(m, "[pad] x is float32[2,3] but paddings has 1 pairs")) << m;
}

TEST(GatherErrors, IndexOutOfRangeInTensorFlowsWording) {
  Tensor params = Tensor::zeros({8, 4});
  Tensor indices = Tensor::from_vector<std::int32_t>({0, 7, 2, 9}, {4});
  std::string m = error_message<IndexError>([&] { ops::gather(params, indices); });
  EXPECT_EQ(m, "[gather] indices[3] = 9 is not in [0, 8) (params is float32[8,4], axis 0)");
}

TEST(GatherErrors, NegativeIndexNamesItsPositionInIndices) {
  Tensor params = Tensor::zeros({2, 5});
  Tensor indices = Tensor::from_vector<std::int64_t>({0, 1, -1, 4}, {2, 2});
  std::string m = error_message<IndexError>([&] { ops::gather(params, indices, 1); });
  EXPECT_EQ(m, "[gather] indices[1,0] = -1 is not in [0, 5) (params is float32[2,5], axis 1)");
}

TEST(GatherErrors, FloatIndicesAreATypeError) {
  std::string m = error_message<TypeError>([] { ops::gather(Tensor::zeros({8, 4}), Tensor::zeros({3})); });
  EXPECT_TRUE(contains(m, "[gather] indices is float32[3]; indices must be int32 or int64")) << m;
}

TEST(GatherErrors, AxisOutOfRange) {
  std::string m = error_message<ShapeError>([] {
    ops::gather(Tensor::zeros({8, 4}), Tensor::from_vector<std::int32_t>({0}, {1}), 2);
  });
  EXPECT_TRUE(contains(m, "[gather] axis 2 is out of range for a tensor of rank 2")) << m;
}

TEST(ScatterAddErrors, UpdatesOfTheWrongShape) {
  Tensor indices = Tensor::from_vector<std::int64_t>({0, 1}, {2});
  std::string m = error_message<ShapeError>([&] { ops::scatter_add(indices, Tensor::zeros({3, 4}), {5, 4}); });
  EXPECT_TRUE(contains(m, "[scatter_add] updates is float32[3,4]")) << m;
  EXPECT_TRUE(contains(m, "need updates of shape [2,4]")) << m;
}

TEST(ScatterAddErrors, IndexOutOfRange) {
  Tensor indices = Tensor::from_vector<std::int64_t>({0, 5}, {2});
  std::string m = error_message<IndexError>([&] { ops::scatter_add(indices, Tensor::zeros({2, 4}), {5, 4}); });
  EXPECT_EQ(m, "[scatter_add] indices[1] = 5 is not in [0, 5) (the output is float32[5,4], axis 0)");
}

TEST(OneHotErrors, FloatIndicesAndNegativeDepth) {
  std::string m = error_message<TypeError>([] { ops::one_hot(Tensor::zeros({3}), 4); });
  EXPECT_TRUE(contains(m, "[one_hot] indices is float32[3]; indices must be int32 or int64")) << m;
  m = error_message<ValueError>([] { ops::one_hot(Tensor::from_vector<std::int32_t>({1}, {1}), -2); });
  EXPECT_TRUE(contains(m, "[one_hot] depth is -2")) << m;
}

TEST(ReshapeBehaviour, SharesTheInputBuffer) {
  Tensor x = random::uniform({4, 6}, random::Key(1));
  Tensor y = ops::reshape(x, {2, -1});
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(y.raw_data(), x.raw_data());
}

// A compiled program binds the output to its own memory and runs the kernel: it must copy.
TEST(ReshapeBehaviour, KernelCopiesIntoSeparateMemory) {
  Tensor x = random::uniform({3, 4}, random::Key(2));
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::reshape(x, {4, 3});
  ASSERT_NE(y.grad_record(), nullptr);
  const Primitive& reshape = *y.grad_record()->primitive;
  EXPECT_TRUE(reshape.is_view());
  Tensor separate = Tensor::zeros({4, 3});
  std::vector<TensorView> inputs{x.view()};
  reshape.eval_cpu(inputs, separate.view());
  EXPECT_EQ(separate.to_vector<float>(), x.to_vector<float>());
}

// Shape ops move bytes: bfloat16 stays bit-exact, and bool and int64 move like any other dtype.
TEST(ShapeOpsBehaviour, MoveEveryDtypeBitExactly) {
  std::vector<bfloat16> halves;
  for (int i = 0; i < 12; ++i) halves.push_back(bfloat16::from_bits(static_cast<std::uint16_t>(0x3f80 + i)));
  Tensor h = Tensor::from_vector(halves, {3, 4});
  Tensor t = ops::transpose(ops::transpose(h));
  EXPECT_EQ(std::memcmp(t.raw_data(), h.raw_data(), h.nbytes()), 0);
  Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(ops::pad(b, {{1, 1}}, 1.0).to_vector<bool>(), (std::vector<bool>{true, true, false, true, true}));
  Tensor l = Tensor::from_vector<std::int64_t>({1LL << 40, -3}, {2});
  EXPECT_EQ(ops::concat({l, l}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1LL << 40, -3, 1LL << 40, -3}));
}

// Many updates into few rows: the same sums, bit for bit, on one thread and on several.
TEST(ScatterAddBehaviour, RepeatedIndicesAccumulateDeterministically) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 4000; ++i) ids.push_back((i * 7) % 3);
  Tensor indices = Tensor::from_vector(ids, {4000});
  Tensor updates = random::normal({4000, 64}, random::Key(5));
  int threads = num_threads();
  set_num_threads(1);
  std::vector<float> serial = ops::scatter_add(indices, updates, {3, 64}).to_vector<float>();
  set_num_threads(4);
  std::vector<float> parallel = ops::scatter_add(indices, updates, {3, 64}).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace kestrel
