#include "datasets/builtin/fashion_mnist.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "framework/core/error.h"
#include "framework/ops/reduce.h"

namespace kestrel::datasets {
namespace {

TEST(FashionMnist, LoadsTheDebianPackage) {
  if (!std::filesystem::exists(fashion_mnist::kDefaultDirectory)) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (bash .ci/setup installs it)";
  }
  auto data = fashion_mnist::load_data();
  EXPECT_EQ(data.train.images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(data.train.labels.shape(), (Shape{60000}));
  EXPECT_EQ(data.test.images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(data.test.labels.dtype(), DType::int64);
  EXPECT_EQ(ops::max(data.train.images).item(), 255.0);
  EXPECT_EQ(ops::max(data.train.labels).item(), 9.0);
}

TEST(FashionMnist, MissingDirectorySaysWhatToInstall) {
  try {
    fashion_mnist::load_data("/nonexistent/fashion");
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kestrel::datasets
