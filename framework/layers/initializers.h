// Weight initializers, with Keras's names and defaults.
//
//   Initializer init = "glorot_uniform";                       // by name, as Keras strings
//   Initializer normal = initializers::RandomNormal({.stddev = 0.02});
//   Tensor w = init({784, 512}, DType::float32, random::next_global_key());
//
// Fans follow Keras: a [in, out] kernel has fan_in = in and fan_out = out; a convolution kernel
// [kh, kw, in, out] multiplies both by kh * kw.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "framework/core/random.h"
#include "framework/core/tensor.h"

namespace kestrel {

class Initializer {
 public:
  using Fn = std::function<Tensor(const Shape& shape, DType dtype, const random::Key& key)>;

  /// The numbers a Keras config gives this initializer ({"mean": 0, "stddev": 0.05}), by Keras key.
  using Arguments = std::map<std::string, double>;

  Initializer(std::string name, Fn fn, Arguments arguments = {});
  /// By Keras name: glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal,
  /// zeros, ones, random_normal, random_uniform (or "uniform"), truncated_normal, orthogonal. Other names
  /// throw ValueError.
  Initializer(const char* name);  // NOLINT(google-explicit-constructor): Keras takes strings
  // NOLINTNEXTLINE(google-explicit-constructor): kernel_initializer = "he_normal", as Keras takes it
  Initializer(const std::string& name);

  Tensor operator()(const Shape& shape, DType dtype, const random::Key& key) const { return fn_(shape, dtype, key); }
  const std::string& name() const { return name_; }
  const Arguments& arguments() const { return arguments_; }

 private:
  std::string name_;
  Fn fn_;
  Arguments arguments_;
};

namespace initializers {

struct RandomNormalOptions {
  double mean = 0.0;
  double stddev = 0.05;
};
struct OrthogonalOptions {
  double gain = 1.0;  ///< multiplies the orthogonal matrix
};
struct RandomUniformOptions {
  double minval = -0.05;
  double maxval = 0.05;
};

// NOLINTBEGIN(readability-identifier-naming): Keras's initializer names, as keras.initializers has them
Initializer Zeros();
Initializer Ones();
Initializer Constant(double value);
Initializer RandomNormal(RandomNormalOptions options = {});
Initializer RandomUniform(RandomUniformOptions options = {});
Initializer TruncatedNormal(RandomNormalOptions options = {});
Initializer GlorotUniform();
Initializer GlorotNormal();
Initializer HeUniform();
Initializer HeNormal();
Initializer LecunUniform();
Initializer LecunNormal();
/// Keras's Orthogonal: the Q of a QR decomposition of a standard normal matrix, its columns' signs
/// fixed by R's diagonal, times gain. The shape is seen as [prod(shape[:-1]), shape[-1]]: orthonormal
/// columns when that is tall, orthonormal rows when wide (an RNN's recurrent_kernel [units, 4 * units]).
Initializer Orthogonal(OrthogonalOptions options = {});
// NOLINTEND(readability-identifier-naming)

/// (fan_in, fan_out) of a weight shape, as Keras computes them.
std::pair<double, double> compute_fans(const Shape& shape);

}  // namespace initializers
}  // namespace kestrel
