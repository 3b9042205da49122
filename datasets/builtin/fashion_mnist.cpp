#include "datasets/builtin/fashion_mnist.h"

#include <filesystem>

#include "datasets/io/idx.h"
#include "framework/core/error.h"

namespace kestrel::datasets::fashion_mnist {
namespace {

std::string locate(const std::string& directory, const std::string& stem) {
  for (const std::string& candidate : {stem + ".gz", stem}) {
    std::filesystem::path p = std::filesystem::path(directory) / candidate;
    if (std::filesystem::exists(p)) return p.string();
  }
  throw IOError("Fashion-MNIST file '" + stem + "(.gz)' is not in '" + directory +
                "'; install Debian's dataset-fashion-mnist package (bash .ci/setup) or pass its directory");
}

Split load_split(const std::string& directory, const std::string& prefix) {
  Split split{read_idx(locate(directory, prefix + "-images-idx3-ubyte"), DType::float32),
              read_idx(locate(directory, prefix + "-labels-idx1-ubyte"), DType::int64)};
  if (split.images.rank() != 3 || split.labels.rank() != 1 || split.images.shape()[0] != split.labels.shape()[0]) {
    throw IOError("Fashion-MNIST '" + prefix + "' files in '" + directory + "' disagree: images " +
                  split.images.shape().to_string() + ", labels " + split.labels.shape().to_string());
  }
  return split;
}

}  // namespace

Data load_data(const std::string& directory) { return {load_split(directory, "train"), load_split(directory, "t10k")}; }

}  // namespace kestrel::datasets::fashion_mnist
