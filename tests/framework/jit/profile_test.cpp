// Program profiles: with profiling on, an executor times its kernels into its program's profile,
// by op kind and matmul shape, and the report gives time per run, shares and GFLOP/s.
#include "framework/jit/profile.h"

#include <gtest/gtest.h>

#include <sstream>

#include "framework/jit/executor.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using testing::contains;
using testing::count_of;

// Profiling on for a test, and nothing of it left for the report at exit.
class Profiling {
 public:
  Profiling() {
    set_profiling(true);
    reset_profiles();
  }
  ~Profiling() {
    reset_profiles();
    set_profiling(false);
  }
};

Graph mlp_layer() {
  return pass_testing::trace_graph(
      [](const std::vector<Tensor>& in) {
        const Tensor h = ops::relu(ops::add(ops::matmul(in[0], in[1]), in[2]));
        return std::vector<Tensor>{ops::matmul(h, in[1], {.transpose_b = true}), ops::reshape(h, {-1})};
      },
      std::vector<TensorSpec>{{{32, 64}, DType::float32}, {{64, 64}, DType::float32}, {{64}, DType::float32}});
}

// The calls column of the report's first row named `label` (an op kind or a matmul shape), or -1.
std::int64_t calls_of(const std::string& report, const std::string& label) {
  std::istringstream lines(report);
  for (std::string line; std::getline(lines, line);) {
    const std::string start = "  " + label + "  ";
    if (line.rfind(start, 0) != 0) continue;
    std::int64_t calls = -1;
    std::istringstream(line.substr(start.size())) >> calls;
    return calls;
  }
  return -1;
}

std::vector<Tensor> mlp_layer_inputs() { return {Tensor::ones({32, 64}), Tensor::ones({64, 64}), Tensor::ones({64})}; }

TEST(Profile, AnExecutorTimesEachKernelByKindAndMatmulShape) {
  const Profiling on;
  const Executor exec(mlp_layer(), nullptr, "'layer' #1");
  for (int run = 0; run < 3; ++run) exec.run(mlp_layer_inputs());
  const std::string report = profile_report();
  EXPECT_TRUE(contains(report, "KESTREL_PROFILE: kernel time per run of each compiled program")) << report;
  EXPECT_TRUE(contains(report, "'layer' #1: 3 runs, ")) << report;
  // Two matmuls of one shape (32 x 64 x 64: the second's b is transposed), 2 * 32 * 64 * 64 FLOPs each.
  EXPECT_EQ(calls_of(report, "matmul"), 2) << report;
  EXPECT_EQ(calls_of(report, "32 x 64 x 64"), 2) << report;
  EXPECT_EQ(calls_of(report, "add"), 1) << report;
  EXPECT_EQ(calls_of(report, "relu"), 1) << report;
  EXPECT_FALSE(contains(report, "reshape")) << report;  // a view: no kernel
}

TEST(Profile, AMatmulReadingHeadsInPlaceReportsItsProduct) {
  // Attention scores over [2, 4] heads of [16, 8], q and k kept as [2, 16, 4, 8]: after transpose
  // folding the matmul reads them in place, and the row still names 16 x 16 x 8.
  const Profiling on;
  Graph graph = pass_testing::trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::matmul(ops::transpose(in[0], {0, 2, 1, 3}), ops::transpose(in[1], {0, 2, 1, 3}),
                                               {.transpose_b = true})};
      },
      std::vector<TensorSpec>{{{2, 16, 4, 8}, DType::float32}, {{2, 16, 4, 8}, DType::float32}});
  default_pipeline().run(graph);
  ASSERT_EQ(pass_testing::count_ops(graph, OpId::transpose), 0) << graph.to_string();
  const Executor exec(graph, nullptr, "'scores' #1");
  exec.run({Tensor::ones({2, 16, 4, 8}), Tensor::ones({2, 16, 4, 8})});
  const std::string report = profile_report();
  EXPECT_EQ(calls_of(report, "[2,4] 16 x 16 x 8"), 1) << report;
}

TEST(Profile, ExecutorsOfOneProgramShareItsProfile) {
  const Profiling on;
  const Executor first(mlp_layer(), nullptr, "'layer' #1");
  const Executor second(mlp_layer(), nullptr, "'layer' #1");  // another replica's instance
  first.run(mlp_layer_inputs());
  second.run(mlp_layer_inputs());
  const std::string report = profile_report();
  EXPECT_EQ(count_of(report, "'layer' #1: "), 1u) << report;
  EXPECT_TRUE(contains(report, "'layer' #1: 2 runs, ")) << report;
  EXPECT_EQ(calls_of(report, "matmul"), 2) << report;  // per run
}

TEST(Profile, NothingIsTimedWithProfilingOffAndResetForgets) {
  set_profiling(false);
  const Executor quiet(mlp_layer(), nullptr, "'quiet' #1");
  quiet.run(mlp_layer_inputs());
  EXPECT_FALSE(contains(profile_report(), "'quiet'"));
  const Profiling on;
  const Executor timed(mlp_layer(), nullptr, "'timed' #1");
  timed.run(mlp_layer_inputs());
  EXPECT_TRUE(contains(profile_report(), "'timed' #1: 1 runs"));
  reset_profiles();
  EXPECT_EQ(profile_report(), "");
}

}  // namespace
}  // namespace kestrel::jit
