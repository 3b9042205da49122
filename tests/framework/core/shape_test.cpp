// Shape: dims, strides, broadcasting and axis normalization.
#include "framework/core/shape.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

#include "framework/core/error.h"
#include "tests/support/shape_printer.h"

namespace kestrel {

namespace {

using Dims = std::vector<std::int64_t>;

TEST(Shape, RankNumelAndDims) {
  Shape s{32, 784};
  EXPECT_EQ(s.rank(), 2);
  EXPECT_EQ(s.numel(), 32 * 784);
  EXPECT_EQ(s[0], 32);
  EXPECT_EQ(s[1], 784);
  EXPECT_EQ(s.to_vector(), (Dims{32, 784}));
  ASSERT_EQ(s.dims().size(), 2u);
  EXPECT_EQ(s.dims()[1], 784);
}

TEST(Shape, NegativeIndicesCountFromTheEnd) {
  Shape s{2, 3, 5};
  EXPECT_EQ(s[-1], 5);
  EXPECT_EQ(s[-2], 3);
  EXPECT_EQ(s[-3], 2);
}

TEST(Shape, MutableIndexingWritesTheDim) {
  Shape s{2, 3, 5};
  s[-1] = 7;
  s[0] = 4;
  EXPECT_EQ(s, (Shape{4, 3, 7}));
}

TEST(Shape, ToStringHasNoSpaces) {
  EXPECT_EQ((Shape{32, 784}).to_string(), "[32,784]");
  EXPECT_EQ((Shape{7}).to_string(), "[7]");
  EXPECT_EQ((Shape{1, 2, 3, 4}).to_string(), "[1,2,3,4]");
}

TEST(Shape, ScalarHasRankZeroAndOneElement) {
  Shape s;
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.to_string(), "[]");
  EXPECT_TRUE(s.strides().empty());
  EXPECT_EQ(s, Shape{});
}

TEST(Shape, ZeroSizedDimGivesNoElements) {
  Shape s{4, 0, 3};
  EXPECT_EQ(s.numel(), 0);
  EXPECT_EQ(s.to_string(), "[4,0,3]");
}

TEST(Shape, ConstructsFromVectorAndSpan) {
  Dims dims{3, 4, 5};
  EXPECT_EQ(Shape(dims), (Shape{3, 4, 5}));
  EXPECT_EQ(Shape(std::span<const std::int64_t>(dims.data(), 2)), (Shape{3, 4}));
}

TEST(Shape, StridesAreRowMajorInElements) {
  EXPECT_EQ((Shape{2, 3, 4}).strides(), (Dims{12, 4, 1}));
  EXPECT_EQ((Shape{5}).strides(), (Dims{1}));
  EXPECT_EQ((Shape{2, 1, 3}).strides(), (Dims{3, 3, 1}));
}

TEST(Shape, EqualityComparesRankAndDims) {
  EXPECT_EQ((Shape{2, 3}), (Shape{2, 3}));
  EXPECT_NE((Shape{2, 3}), (Shape{3, 2}));
  EXPECT_NE((Shape{2, 3}), (Shape{2, 3, 1}));
  EXPECT_NE((Shape{1}), Shape{});
}

TEST(Shape, PushBackAppendsADim) {
  Shape s;
  s.push_back(3);
  s.push_back(4);
  EXPECT_EQ(s, (Shape{3, 4}));
}

TEST(Shape, RankEightIsAcceptedAndRankNineIsRejected) {
  Shape eight{1, 2, 1, 2, 1, 2, 1, 2};
  EXPECT_EQ(eight.rank(), Shape::kMaxRank);
  EXPECT_EQ(eight.numel(), 16);
  try {
    Shape nine{1, 1, 1, 1, 1, 1, 1, 1, 1};
    FAIL() << "expected ShapeError for rank 9";
  } catch (const ShapeError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("rank 9"), std::string::npos) << what;
    EXPECT_NE(what.find('8'), std::string::npos) << what;
  }
  EXPECT_THROW(Shape(Dims(9, 1)), ShapeError);
}

TEST(Shape, PushBackPastMaxRankIsRejected) {
  Shape s{1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_THROW(s.push_back(1), ShapeError);
  EXPECT_EQ(s.rank(), Shape::kMaxRank);
}

TEST(Shape, NegativeDimsAreRejected) {
  try {
    Shape s{2, -3};
    FAIL() << "expected ShapeError for a negative dim";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("-3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Shape(Dims{-1}), ShapeError);
}

TEST(Shape, PushBackRejectsNegativeDims) {
  Shape s{2};
  EXPECT_THROW(s.push_back(-1), ShapeError);
  EXPECT_EQ(s, (Shape{2}));
}

TEST(Shape, ShapesWhoseElementCountOverflowsAreRejected) {
  constexpr std::int64_t k2To31 = std::int64_t{1} << 31, k2To32 = std::int64_t{1} << 32;
  EXPECT_EQ((Shape{k2To31, k2To31}).numel(), std::int64_t{1} << 62);
  EXPECT_THROW((Shape{k2To32, k2To32}), ShapeError);
  EXPECT_THROW((Shape{k2To31, k2To31, 2}), ShapeError);
  // A zero dim makes the count 0, however large the others are.
  EXPECT_EQ((Shape{k2To32, k2To32, 0}).numel(), 0);
  Shape s{k2To32};
  EXPECT_THROW(s.push_back(k2To32), ShapeError);
  EXPECT_EQ(s, (Shape{k2To32})) << "a rejected push_back must leave the shape as it was";
}

TEST(Shape, EqualShapesHashEqually) {
  EXPECT_EQ(hash_value(Shape{2, 3}), hash_value(Shape{2, 3}));
  std::unordered_set<std::size_t> hashes;
  for (const Shape& s : {Shape{}, Shape{1}, Shape{2, 3}, Shape{3, 2}, Shape{2, 3, 1}, Shape{6}}) {
    hashes.insert(hash_value(s));
  }
  EXPECT_EQ(hashes.size(), 6u) << "distinct small shapes should not collide";
}

struct BroadcastCase {
  Shape a, b, want;
};

class BroadcastShapes : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(BroadcastShapes, FollowsNumPyRulesInBothArgumentOrders) {
  const BroadcastCase& c = GetParam();
  EXPECT_EQ(broadcast_shapes(c.a, c.b, "add"), c.want) << c.a.to_string() << " with " << c.b.to_string();
  EXPECT_EQ(broadcast_shapes(c.b, c.a, "add"), c.want) << c.b.to_string() << " with " << c.a.to_string();
}

INSTANTIATE_TEST_SUITE_P(Shape, BroadcastShapes,
                         ::testing::Values(BroadcastCase{{2, 3}, {2, 3}, {2, 3}}, BroadcastCase{{}, {}, {}},
                                           BroadcastCase{{}, {4, 5}, {4, 5}}, BroadcastCase{{2, 3}, {3}, {2, 3}},
                                           BroadcastCase{{2, 1}, {1, 3}, {2, 3}},
                                           BroadcastCase{{8, 1, 6, 1}, {7, 1, 5}, {8, 7, 6, 5}},
                                           BroadcastCase{{5, 4}, {1}, {5, 4}}, BroadcastCase{{0, 3}, {1, 3}, {0, 3}},
                                           BroadcastCase{{0}, {1}, {0}}, BroadcastCase{{1, 1, 1}, {}, {1, 1, 1}}));

TEST(BroadcastShapesError, NamesTheOpAndBothShapes) {
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4, 3}, "add");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("[add] ", 0), 0u) << what;
    EXPECT_NE(what.find("[2,3]"), std::string::npos) << what;
    EXPECT_NE(what.find("[4,3]"), std::string::npos) << what;
    EXPECT_NE(what.find("2 vs 4"), std::string::npos) << what;
  }
}

TEST(BroadcastShapesError, RejectsMismatchedTrailingDims) {
  EXPECT_THROW(broadcast_shapes(Shape{3}, Shape{4}, "mul"), ShapeError);
  EXPECT_THROW(broadcast_shapes(Shape{2, 3}, Shape{2}, "mul"), ShapeError);
  EXPECT_THROW(broadcast_shapes(Shape{0}, Shape{2}, "mul"), ShapeError);
}

TEST(NormalizeAxis, MapsNegativeAxesIntoRange) {
  EXPECT_EQ(normalize_axis(0, 3, "sum"), 0);
  EXPECT_EQ(normalize_axis(2, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(-1, 3, "sum"), 2);
  EXPECT_EQ(normalize_axis(-3, 3, "sum"), 0);
}

TEST(NormalizeAxis, RejectsOutOfRangeAxesNamingTheOp) {
  EXPECT_THROW(normalize_axis(3, 3, "sum"), ShapeError);
  EXPECT_THROW(normalize_axis(-4, 3, "sum"), ShapeError);
  try {
    normalize_axis(5, 2, "softmax");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.rfind("[softmax] ", 0), 0u) << what;
    EXPECT_NE(what.find("axis 5"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 2"), std::string::npos) << what;
    EXPECT_NE(what.find("[-2, 2)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace kestrel
