// AlgebraicSimplification: each identity it removes, and the look-alikes it must keep.
#include <gtest/gtest.h>

#include "framework/core/random.h"
#include "framework/jit/passes/algebraic_simplification.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::expect_same_outputs;
using pass_testing::run_pass;
using pass_testing::trace_graph;
using pass_testing::TracedFn;

struct Case {
  const char* name;
  TracedFn fn;
};

// Simplifies, drops what that left dead, and checks the outputs did not change.
Graph simplified(const TracedFn& fn, const Tensor& x, bool expect_changed) {
  Graph g = trace_graph(fn, {x});
  const Graph before = g;
  EXPECT_EQ(run_pass(AlgebraicSimplification(), g), expect_changed) << g.to_string();
  run_pass(DeadCodeElimination(), g);
  expect_same_outputs(before, g, {x});
  return g;
}

TensorSpec spec_of(const Graph& g, ValueId id) { return g.node(id).spec; }

TEST(AlgebraicSimplification, NeutralConstantsVanish) {
  Tensor x = random::normal({2, 3}, random::Key(1));
  const std::vector<Case> cases = {
      {"x * 1", [](auto& in) { return std::vector<Tensor>{in[0] * 1.0}; }},
      {"1 * x", [](auto& in) { return std::vector<Tensor>{1.0 * in[0]}; }},
      {"x + 0", [](auto& in) { return std::vector<Tensor>{in[0] + 0.0}; }},
      {"0 + x", [](auto& in) { return std::vector<Tensor>{0.0 + in[0]}; }},
      {"x - 0", [](auto& in) { return std::vector<Tensor>{in[0] - 0.0}; }},
      {"x / 1", [](auto& in) { return std::vector<Tensor>{in[0] / 1.0}; }},
      {"x * ones[3]", [](auto& in) { return std::vector<Tensor>{in[0] * Tensor::ones({3})}; }},
      {"zeros[2,3] + x",
       [](auto& in) {
         return std::vector<Tensor>{Tensor::zeros({2, 3}) + in[0]};
       }},
      {"(x * 1 + 0) / 1", [](auto& in) { return std::vector<Tensor>{(in[0] * 1.0 + 0.0) / 1.0}; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = simplified(c.fn, x, /*expect_changed=*/true);
    EXPECT_EQ(g.num_ops(), 0) << g.to_string();
    EXPECT_EQ(g.outputs()[0], g.inputs()[0]);
  }
  Tensor n = Tensor::from_vector<std::int32_t>({3, -7}, {2});
  Graph ints = simplified([](auto& in) { return std::vector<Tensor>{in[0] * 1.0 - 0.0}; }, n, true);
  EXPECT_EQ(ints.num_ops(), 0) << ints.to_string();
}

TEST(AlgebraicSimplification, KeepsWhatIsNotAnIdentity) {
  Tensor x = random::normal({2, 3}, random::Key(2));
  const std::vector<Case> cases = {
      {"x * 0 (NaN * 0 is NaN)", [](auto& in) { return std::vector<Tensor>{in[0] * 0.0}; }},
      {"x * ones[4,2,3] broadcasts x",
       [](auto& in) {
         return std::vector<Tensor>{in[0] * Tensor::ones({4, 2, 3})};
       }},
      {"zeros[1,1,3] + x adds an axis",
       [](auto& in) {
         return std::vector<Tensor>{Tensor::zeros({1, 1, 3}) + in[0]};
       }},
      {"x * [1,2,1]",
       [](auto& in) {
         return std::vector<Tensor>{in[0] * Tensor::from_vector<float>({1, 2, 1}, {3})};
       }},
      {"0 - x", [](auto& in) { return std::vector<Tensor>{0.0 - in[0]}; }},
      {"1 / x", [](auto& in) { return std::vector<Tensor>{1.0 / in[0]}; }},
      {"x + 1", [](auto& in) { return std::vector<Tensor>{in[0] + 1.0}; }},
      {"x * -1", [](auto& in) { return std::vector<Tensor>{in[0] * -1.0}; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g = simplified(c.fn, x, /*expect_changed=*/false);
    EXPECT_EQ(g.num_ops(), 1) << g.to_string();
  }
}

TEST(AlgebraicSimplification, DoubleNegationCancels) {
  Tensor x = random::normal({5}, random::Key(3));
  Graph twice = simplified([](auto& in) { return std::vector<Tensor>{-(-in[0])}; }, x, true);
  EXPECT_EQ(twice.num_ops(), 0);
  Graph thrice = simplified([](auto& in) { return std::vector<Tensor>{-(-(-in[0]))}; }, x, true);
  EXPECT_EQ(count_ops(thrice, OpId::negative), 1);
  EXPECT_EQ(thrice.num_ops(), 1);
}

TEST(AlgebraicSimplification, ReshapeChainsBecomeOneReshape) {
  Tensor x = random::normal({4, 6}, random::Key(4));
  Graph chain = simplified(
      [](auto& in) {
        return std::vector<Tensor>{ops::reshape(ops::reshape(ops::reshape(in[0], {24}), {2, 12}), {6, 4})};
      },
      x, true);
  ASSERT_EQ(chain.num_ops(), 1) << chain.to_string();
  const Node& reshape = chain.node(chain.outputs()[0]);
  EXPECT_EQ(reshape.primitive->id(), OpId::reshape);
  EXPECT_EQ(reshape.inputs[0], chain.inputs()[0]);
  EXPECT_EQ(reshape.spec.shape, Shape({6, 4}));

  Graph round_trip = simplified(
      [](auto& in) {
        return std::vector<Tensor>{ops::reshape(ops::reshape(in[0], {24}), {4, 6})};
      },
      x, true);
  EXPECT_EQ(round_trip.num_ops(), 0);

  // The middle reshape has another user: it stays, and the last reshape reads x directly.
  Graph shared = simplified(
      [](auto& in) {
        Tensor flat = ops::reshape(in[0], {24});
        return std::vector<Tensor>{ops::reshape(flat, {6, 4}), ops::exp(flat)};
      },
      x, true);
  EXPECT_EQ(count_ops(shared, OpId::reshape), 2);
  EXPECT_EQ(shared.node(shared.outputs()[0]).inputs[0], shared.inputs()[0]);
}

TEST(AlgebraicSimplification, ShapeOpsToTheSameSpecVanish) {
  // The public ops never emit these (they return x), so build them from traced primitives.
  auto primitive_of = [](const TracedFn& fn, const Tensor& like) {
    Graph g = trace_graph(fn, {like});
    return g.node(g.outputs()[0]).primitive;
  };
  const TensorSpec spec{{2, 3}, DType::float32};
  Graph g;
  const ValueId x = g.add_input(spec, "x");
  g.add_output(g.add_op(primitive_of(
                            [](auto& in) {
                              return std::vector<Tensor>{ops::reshape(in[0], {2, 3})};
                            },
                            Tensor::zeros({6})),
                        {x}, spec, ""));
  g.add_output(g.add_op(primitive_of(
                            [](auto& in) {
                              return std::vector<Tensor>{ops::broadcast_to(in[0], {2, 3})};
                            },
                            Tensor::zeros({1, 3})),
                        {x}, spec, ""));
  g.add_output(g.add_op(primitive_of([](auto& in) { return std::vector<Tensor>{ops::cast(in[0], DType::float32)}; },
                                     Tensor::zeros({2, 3}, DType::int32)),
                        {x}, spec, ""));
  g.verify();
  const Graph before = g;
  EXPECT_TRUE(run_pass(AlgebraicSimplification(), g));
  EXPECT_EQ(g.num_ops(), 0) << g.to_string();
  for (ValueId out : g.outputs()) EXPECT_EQ(out, g.inputs()[0]);
  expect_same_outputs(before, g, {random::normal({2, 3}, random::Key(5))});
}

TEST(AlgebraicSimplification, TransposesThatUndoEachOtherVanish) {
  Tensor m = random::normal({3, 5}, random::Key(6));
  Graph g2 = simplified([](auto& in) { return std::vector<Tensor>{ops::transpose(ops::transpose(in[0]))}; }, m, true);
  EXPECT_EQ(g2.num_ops(), 0);

  Tensor cube = random::normal({3, 3, 3}, random::Key(7));
  Graph inverse = simplified(
      [](auto& in) {
        return std::vector<Tensor>{ops::transpose(ops::transpose(in[0], {1, 2, 0}), {2, 0, 1})};
      },
      cube, true);
  EXPECT_EQ(inverse.num_ops(), 0);

  // Same spec as x, but the axes rotate twice: not the identity.
  Graph rotated = simplified(
      [](auto& in) {
        return std::vector<Tensor>{ops::transpose(ops::transpose(in[0], {1, 2, 0}), {1, 2, 0})};
      },
      cube, false);
  EXPECT_EQ(count_ops(rotated, OpId::transpose), 2);
  EXPECT_EQ(spec_of(rotated, rotated.outputs()[0]), cube.spec());

  Graph different = simplified(
      [](auto& in) {
        return std::vector<Tensor>{ops::transpose(ops::transpose(in[0], {1, 0, 2}), {0, 2, 1})};
      },
      cube, false);
  EXPECT_EQ(count_ops(different, OpId::transpose), 2);
}

}  // namespace
}  // namespace kestrel::jit
