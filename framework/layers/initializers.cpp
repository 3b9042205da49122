#include "framework/layers/initializers.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/error.h"

namespace kestrel {
namespace initializers {
namespace {

enum class Mode { fan_in, fan_out, fan_avg };
enum class Distribution { truncated_normal, uniform };

// Keras's VarianceScaling: variance scale / n, with n the chosen fan.
Initializer variance_scaling(std::string name, double scale, Mode mode, Distribution distribution) {
  return Initializer(std::move(name), [=](const Shape& shape, DType dtype, const random::Key& key) {
    auto [fan_in, fan_out] = compute_fans(shape);
    double n = mode == Mode::fan_in ? fan_in : mode == Mode::fan_out ? fan_out : (fan_in + fan_out) / 2.0;
    n = std::max(n, 1.0);
    if (distribution == Distribution::uniform) {
      double limit = std::sqrt(3.0 * scale / n);
      return random::uniform(shape, key, -limit, limit, dtype);
    }
    // The stddev of a normal truncated at two stddevs is 0.8796... of the untruncated one.
    double stddev = std::sqrt(scale / n) / 0.87962566103423978;
    return random::truncated_normal(shape, key, 0.0, stddev, dtype);
  });
}

Initializer by_name(const std::string& name) {
  if (name == "zeros") return Zeros();
  if (name == "ones") return Ones();
  if (name == "random_normal") return RandomNormal();
  if (name == "random_uniform" || name == "uniform") return RandomUniform();
  if (name == "truncated_normal") return TruncatedNormal();
  if (name == "glorot_uniform") return GlorotUniform();
  if (name == "glorot_normal") return GlorotNormal();
  if (name == "he_uniform") return HeUniform();
  if (name == "he_normal") return HeNormal();
  if (name == "lecun_uniform") return LecunUniform();
  if (name == "lecun_normal") return LecunNormal();
  if (name == "orthogonal") return Orthogonal();
  throw ValueError("unknown initializer '" + name +
                   "': expected one of zeros, ones, random_normal, random_uniform (uniform), truncated_normal, "
                   "glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, orthogonal");
}

}  // namespace

std::pair<double, double> compute_fans(const Shape& shape) {
  if (shape.rank() == 0) return {1.0, 1.0};
  if (shape.rank() == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive = 1.0;
  for (int d = 0; d + 2 < shape.rank(); ++d) receptive *= static_cast<double>(shape[d]);
  return {receptive * static_cast<double>(shape[-2]), receptive * static_cast<double>(shape[-1])};
}

Initializer Constant(double value) {
  return Initializer(
      "constant",
      [value](const Shape& shape, DType dtype, const random::Key&) { return Tensor::full(shape, value, dtype); },
      {{"value", value}});
}
Initializer Zeros() { return Initializer("zeros", Constant(0.0)); }
Initializer Ones() { return Initializer("ones", Constant(1.0)); }

Initializer RandomNormal(RandomNormalOptions o) {
  return Initializer("random_normal",
                     [o](const Shape& shape, DType dtype, const random::Key& key) {
                       return random::normal(shape, key, o.mean, o.stddev, dtype);
                     },
                     {{"mean", o.mean}, {"stddev", o.stddev}});
}
Initializer RandomUniform(RandomUniformOptions o) {
  return Initializer("random_uniform",
                     [o](const Shape& shape, DType dtype, const random::Key& key) {
                       return random::uniform(shape, key, o.minval, o.maxval, dtype);
                     },
                     {{"minval", o.minval}, {"maxval", o.maxval}});
}
Initializer TruncatedNormal(RandomNormalOptions o) {
  return Initializer("truncated_normal",
                     [o](const Shape& shape, DType dtype, const random::Key& key) {
                       return random::truncated_normal(shape, key, o.mean, o.stddev, dtype);
                     },
                     {{"mean", o.mean}, {"stddev", o.stddev}});
}
Initializer GlorotUniform() { return variance_scaling("glorot_uniform", 1.0, Mode::fan_avg, Distribution::uniform); }
Initializer GlorotNormal() {
  return variance_scaling("glorot_normal", 1.0, Mode::fan_avg, Distribution::truncated_normal);
}
Initializer HeUniform() { return variance_scaling("he_uniform", 2.0, Mode::fan_in, Distribution::uniform); }
Initializer HeNormal() { return variance_scaling("he_normal", 2.0, Mode::fan_in, Distribution::truncated_normal); }
Initializer LecunUniform() { return variance_scaling("lecun_uniform", 1.0, Mode::fan_in, Distribution::uniform); }
Initializer LecunNormal() {
  return variance_scaling("lecun_normal", 1.0, Mode::fan_in, Distribution::truncated_normal);
}

namespace {

// Keras's Orthogonal, for a shape seen as [rows, cols] = [prod(shape[:-1]), shape[-1]].
Tensor orthogonal_matrix(const Shape& shape, DType dtype, const random::Key& key, double gain) {
  if (shape.rank() < 2) {
    throw ValueError("initializer 'orthogonal': the shape is " + shape.to_string() +
                     "; an orthogonal matrix needs at least two dims (Keras's Orthogonal)");
  }
  if (dtype != DType::float32 && dtype != DType::bfloat16) {
    throw TypeError("initializer 'orthogonal': dtype must be float32 or bfloat16, got " +
                    std::string(to_string(dtype)));
  }
  const std::int64_t rows = shape.numel() / std::max<std::int64_t>(shape[-1], 1);
  const std::int64_t cols = shape[-1];
  const std::int64_t tall = std::max(rows, cols);
  const std::int64_t narrow = std::min(rows, cols);
  // q [tall, narrow], row-major, from a normal matrix by Gram-Schmidt on its columns (each pass run
  // twice, which keeps it orthogonal to rounding). Its R has a positive diagonal, which is what
  // Keras's q *= sign(diag(r)) makes of LAPACK's Householder QR: the same Q.
  std::vector<double> q = random::normal({tall, narrow}, key).to_vector<double>();
  auto at = [&](std::int64_t i, std::int64_t j) -> double& { return q[static_cast<std::size_t>(i * narrow + j)]; };
  for (std::int64_t j = 0; j < narrow; ++j) {
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t k = 0; k < j; ++k) {
        double dot = 0;
        for (std::int64_t i = 0; i < tall; ++i) dot += at(i, k) * at(i, j);
        for (std::int64_t i = 0; i < tall; ++i) at(i, j) -= dot * at(i, k);
      }
    }
    double norm = 0;
    for (std::int64_t i = 0; i < tall; ++i) norm += at(i, j) * at(i, j);
    norm = std::sqrt(norm);
    for (std::int64_t i = 0; i < tall; ++i) at(i, j) = norm > 0 ? at(i, j) / norm : 0.0;
  }
  Tensor out = Tensor::empty(shape, dtype);
  void* data = out.view().data;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      // A wide matrix takes q transposed: orthonormal rows.
      const auto v = static_cast<float>(gain * (rows >= cols ? at(r, c) : at(c, r)));
      const auto index = static_cast<std::size_t>(r * cols + c);
      if (dtype == DType::float32) {
        static_cast<float*>(data)[index] = v;
      } else {
        static_cast<bfloat16*>(data)[index] = bfloat16(v);
      }
    }
  }
  return out;
}

}  // namespace

Initializer Orthogonal(OrthogonalOptions o) {
  return Initializer("orthogonal",
                     [o](const Shape& shape, DType dtype, const random::Key& key) {
                       return orthogonal_matrix(shape, dtype, key, o.gain);
                     },
                     {{"gain", o.gain}});
}

}  // namespace initializers

Initializer::Initializer(std::string name, Fn fn, Arguments arguments)
    : name_(std::move(name)), fn_(std::move(fn)), arguments_(std::move(arguments)) {}
Initializer::Initializer(const char* name) : Initializer(std::string(name)) {}
Initializer::Initializer(const std::string& name) : Initializer(initializers::by_name(name)) {}

}  // namespace kestrel
