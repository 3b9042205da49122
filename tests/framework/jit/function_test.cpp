#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

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
  EXPECT_EQ(f.graph("x: float32[3,2]")->num_ops(), 1);  // square and add, fused into one op
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

namespace kestrel::jit {
namespace {

TEST(Function, DumpsEachCompileBeforeAndAfterThePasses) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kestrel_dump_" + std::to_string(::getpid()));
  ::setenv("KESTREL_DUMP_DIR", dir.c_str(), 1);
  Function f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(ops::negative(in[0]))}; },
             "dumped", {"x"});
  f({Tensor::ones({4})});
  ::unsetenv("KESTREL_DUMP_DIR");
  for (const char* stage : {"traced", "optimized"}) {
    const std::filesystem::path text = dir / (std::string("dumped.1.") + stage + ".txt");
    const std::filesystem::path proto = dir / (std::string("dumped.1.") + stage + ".pb");
    ASSERT_TRUE(std::filesystem::exists(text)) << text;
    ASSERT_TRUE(std::filesystem::exists(proto)) << proto;
    std::ifstream in(text);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(testing::contains(content, "input 'x' : float32[4]")) << content;
    EXPECT_GT(std::filesystem::file_size(proto), 0u);
    if (std::filesystem::exists("/usr/bin/protoc")) {
      const std::filesystem::path decoded = dir / "decoded.txt";
      const std::string command = std::string("/usr/bin/protoc --decode=kestrel.jit.GraphProto -I") +
                                  KESTREL_SOURCE_DIR + " framework/jit/graph.proto < " + proto.string() + " > " +
                                  decoded.string();
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
      std::ifstream d(decoded);
      std::string fields((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
      EXPECT_TRUE(testing::contains(fields, "function: \"dumped\"")) << fields;
      EXPECT_TRUE(testing::contains(fields, std::string("stage: \"") + stage + "\"")) << fields;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kestrel::jit
