#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/jit/function.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

TEST(Function, CompilesOncePerSignature) {
  int traced = 0;
  Function f(
      [&traced](const std::vector<Tensor>& in) {
        ++traced;
        return std::vector<Tensor>{ops::add(ops::square(in[0]), in[0])};
      },
      "square_plus", {"x"});
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(f({a})[0].to_vector<float>(), (std::vector<float>{2, 6, 12, 20}));
  f({a});
  f({Tensor::ones({3, 2})});
  f({Tensor::ones({2, 2})});
  EXPECT_EQ(f.compile_count(), 2);  // [2,2] and [3,2]
  EXPECT_EQ(traced, 2);             // replays do not run the C++ function
  ASSERT_NE(f.graph("x: float32[3,2]"), nullptr);
  EXPECT_EQ(f.graph("x: float32[3,2]")->num_ops(), 2);
  EXPECT_EQ(f.graph("x: float32[5,2]"), nullptr);
  EXPECT_GE(f.compile_seconds(), 0.0);
}

TEST(Function, ADtypeChangeIsANewSignature) {
  Function f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::negative(in[0])}; }, "neg");
  f({Tensor::ones({2}, DType::float32)});
  f({Tensor::ones({2}, DType::int32)});
  EXPECT_EQ(f.compile_count(), 2);
  EXPECT_EQ(signature_of({{{2}, DType::int32}}, {}), "input_0: int32[2]");
}

}  // namespace
}  // namespace kestrel::jit
