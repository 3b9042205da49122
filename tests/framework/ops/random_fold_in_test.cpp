// random::fold_in on key tensors: bit-identical to Key::fold_in (so dropout masks do not change
// when keys are folded in a compiled step instead of on the host), traceable, and strict about
// its inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
#include "tests/support/error_message.h"

namespace kestrel {
namespace {

using testing::contains;
using testing::error_message;

Tensor int64_scalar(std::int64_t value) { return Tensor::from_vector<std::int64_t>({value}, Shape{}); }

std::uint64_t bits_of(const Tensor& key) { return std::bit_cast<std::uint64_t>(key.to_vector<std::int64_t>()[0]); }

// Seeds and data across the 64 bits, including ones whose int64 form is negative.
const std::vector<std::uint64_t> kSeeds = {
    0, 1, 42, 0xFFFFFFFFull, 0x100000000ull, 0x9E3779B97F4A7C15ull, std::numeric_limits<std::uint64_t>::max()};
const std::vector<std::int64_t> kData = {
    0, 1, 7, 1000003, std::int64_t{1} << 40, -1, std::numeric_limits<std::int64_t>::min()};

TEST(RandomFoldIn, EqualsKeyFoldInBitForBit) {
  for (std::uint64_t seed : kSeeds) {
    for (std::int64_t data : kData) {
      const random::Key key(seed);
      const Tensor folded = random::fold_in(random::key_tensor(key), int64_scalar(data));
      ASSERT_EQ(folded.spec(), (TensorSpec{Shape{}, DType::int64}));
      EXPECT_EQ(bits_of(folded), key.fold_in(std::bit_cast<std::uint64_t>(data)).as_uint64())
          << "seed " << seed << ", data " << data;
    }
  }
}

TEST(RandomFoldIn, ChainsLikeKeyFoldIn) {
  // The dropout layer's key: seed.fold_in(step).fold_in(call index).
  const random::Key seed(1234);
  const Tensor key = random::fold_in(random::fold_in(random::key_tensor(seed), int64_scalar(17)), int64_scalar(2));
  EXPECT_EQ(random::key_from_tensor(key), seed.fold_in(17).fold_in(2));
}

TEST(RandomFoldIn, DropoutMaskFromAFoldedKeyTensorEqualsTheHostFoldedOne) {
  const Tensor x = random::uniform({6, 16}, random::Key(5), 0.5, 1.5);
  const random::Key seed(99);
  const Tensor on_device = ops::dropout(x, 0.3, random::fold_in(random::key_tensor(seed), int64_scalar(8)));
  const Tensor on_host = ops::dropout(x, 0.3, random::key_tensor(seed.fold_in(8)));
  EXPECT_EQ(on_device.to_vector<float>(), on_host.to_vector<float>());
}

TEST(RandomFoldIn, TracesAndRunsCompiled) {
  // The step counter arrives as a graph input and is folded without reading it on the host.
  const random::Key seed(0xC0FFEEull);
  jit::Graph graph;
  {
    jit::Trace trace;
    jit::TraceScope active(trace);
    Tensor key = trace.input({Shape{}, DType::int64}, "key");
    Tensor step = trace.input({Shape{}, DType::int64}, "step");
    Tensor folded = random::fold_in(key, ops::add(step, int64_scalar(1)));
    ASSERT_TRUE(folded.is_symbolic());
    graph = trace.finish({folded});
  }
  jit::Executor executor(std::move(graph));
  for (std::int64_t step : {0, 1, 41, 1 << 20}) {
    const Tensor got = executor.run({random::key_tensor(seed), int64_scalar(step)})[0];
    EXPECT_EQ(bits_of(got), seed.fold_in(static_cast<std::uint64_t>(step + 1)).as_uint64()) << "step " << step;
  }
}

TEST(RandomFoldInErrors, KeyMustBeAnInt64Scalar) {
  std::string m = error_message<TypeError>([] { random::fold_in(Tensor::scalar(3.0), int64_scalar(1)); });
  EXPECT_TRUE(contains(m, "[random_fold_in] key is float32[]")) << m;
  EXPECT_TRUE(contains(m, "random::key_tensor")) << m;

  m = error_message<ShapeError>([] {
    random::fold_in(Tensor::from_vector<std::int64_t>({1, 2}, {2}), int64_scalar(1));
  });
  EXPECT_TRUE(contains(m, "[random_fold_in] key is int64[2]")) << m;
  EXPECT_TRUE(contains(m, "shape []")) << m;
}

TEST(RandomFoldInErrors, DataMustBeAnInt64Scalar) {
  const Tensor key = random::key_tensor(random::Key(1));
  std::string m = error_message<TypeError>([&] { random::fold_in(key, Tensor::scalar(3, DType::int32)); });
  EXPECT_TRUE(contains(m, "[random_fold_in] data is int32[]")) << m;
  EXPECT_TRUE(contains(m, "ops::cast")) << m;

  m = error_message<ShapeError>([&] { random::fold_in(key, Tensor::zeros({3}, DType::int64)); });
  EXPECT_TRUE(contains(m, "[random_fold_in] data is int64[3]")) << m;
}

TEST(RandomFoldInErrors, UndefinedInputsAreNamed) {
  std::string m = error_message<ValueError>([] { random::fold_in(Tensor(), int64_scalar(1)); });
  EXPECT_TRUE(contains(m, "[random_fold_in] key is an undefined tensor")) << m;
  m = error_message<ValueError>([] { random::fold_in(random::key_tensor(random::Key(1)), Tensor()); });
  EXPECT_TRUE(contains(m, "[random_fold_in] data is an undefined tensor")) << m;
}

}  // namespace
}  // namespace kestrel
