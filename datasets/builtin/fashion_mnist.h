// Fashion-MNIST from Debian's dataset-fashion-mnist package (installed by .ci/setup).
//
//   auto data = datasets::fashion_mnist::load_data();
//   Tensor x = ops::divide(data.train.images, ops::scalar_like(data.train.images, 255.0));
//   data.train.labels;   // int64 [60000], classes 0..9 (kClassNames)
//
// As keras.datasets.fashion_mnist.load_data(): 60,000 training and 10,000 test images of 28x28,
// pixel values 0..255 (as float32: Kestrel has no uint8 dtype).
#pragma once

#include <array>
#include <string>

#include "framework/core/tensor.h"

namespace kestrel::datasets::fashion_mnist {

inline constexpr const char* kDefaultDirectory = "/usr/share/datasets/fashion-mnist";
inline constexpr std::array<const char*, 10> kClassNames = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

struct Split {
  Tensor images;  ///< float32 [n, 28, 28], values 0..255
  Tensor labels;  ///< int64 [n]
};

struct Data {
  Split train;
  Split test;
};

/// Reads the four IDX files from directory; a missing file raises IOError saying to install
/// the dataset-fashion-mnist package (bash .ci/setup).
Data load_data(const std::string& directory = kDefaultDirectory);

}  // namespace kestrel::datasets::fashion_mnist
