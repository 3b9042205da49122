// Op table cases for the neural-network ops: softmax, log_softmax, sparse softmax cross-entropy
// and its backprop, layer_norm, layer_norm_backprop, dropout and random_fold_in. References are
// naive loops in double precision.
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/random.h"
#include "framework/ops/nn.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

// Softmax (or log-softmax) over `axis`, one output element at a time.
Tensor reference_softmax(const Tensor& x, int axis, bool log) {
  const Shape& shape = x.shape();
  std::vector<double> v = x.to_vector<double>();
  std::int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[i];
  for (int i = axis + 1; i < shape.rank(); ++i) inner *= shape[i];
  const std::int64_t n = shape[axis];
  std::vector<double> out(v.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t c = 0; c < inner; ++c) {
      auto at = [&](std::int64_t k) { return static_cast<std::size_t>((o * n + k) * inner + c); };
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t k = 0; k < n; ++k) m = std::max(m, v[at(k)]);
      double total = 0;
      for (std::int64_t k = 0; k < n; ++k) total += std::exp(v[at(k)] - m);
      for (std::int64_t k = 0; k < n; ++k) {
        out[at(k)] = log ? v[at(k)] - m - std::log(total) : std::exp(v[at(k)] - m) / total;
      }
    }
  }
  return float_tensor(out, shape);
}

Tensor reference_cross_entropy(const Tensor& logits, const Tensor& labels, std::int64_t ignore_index) {
  std::vector<double> z = logits.to_vector<double>();
  std::vector<std::int64_t> y = labels.to_vector<std::int64_t>();
  const std::int64_t classes = logits.shape()[-1];
  std::vector<double> loss(y.size(), 0.0);
  for (std::size_t r = 0; r < y.size(); ++r) {
    if (y[r] == ignore_index) continue;
    double total = 0;
    for (std::int64_t c = 0; c < classes; ++c) total += std::exp(z[r * classes + c]);
    loss[r] = std::log(total) - z[r * classes + static_cast<std::size_t>(y[r])];
  }
  return float_tensor(loss, labels.shape());
}

// (softmax(logits) - one_hot(label)) * dloss per row; zero on rows labeled ignore_index.
Tensor reference_cross_entropy_backprop(const Tensor& logits, const Tensor& labels, const Tensor& dloss,
                                        std::int64_t ignore_index) {
  std::vector<double> z = logits.to_vector<double>();
  std::vector<std::int64_t> y = labels.to_vector<std::int64_t>();
  std::vector<double> g = dloss.to_vector<double>();
  const auto classes = static_cast<std::size_t>(logits.shape()[-1]);
  std::vector<double> d(z.size(), 0.0);
  for (std::size_t r = 0; r < y.size(); ++r) {
    if (y[r] == ignore_index) continue;
    double total = 0;
    for (std::size_t c = 0; c < classes; ++c) total += std::exp(z[r * classes + c]);
    for (std::size_t c = 0; c < classes; ++c) {
      const double target = static_cast<std::int64_t>(c) == y[r] ? 1.0 : 0.0;
      d[r * classes + c] = (std::exp(z[r * classes + c]) / total - target) * g[r];
    }
  }
  return float_tensor(d, logits.shape());
}

Tensor reference_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> g = gamma.to_vector<double>();
  std::vector<double> b = beta.to_vector<double>();
  const std::size_t d = g.size();
  std::vector<double> out(v.size());
  for (std::size_t row = 0; row < v.size() / d; ++row) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += v[row * d + i] / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += std::pow(v[row * d + i] - mean, 2) / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) {
      out[row * d + i] = (v[row * d + i] - mean) / std::sqrt(var + epsilon) * g[i] + b[i];
    }
  }
  return float_tensor(out, x.shape());
}

// dgamma = sum over the rows of dy * xhat.
Tensor reference_layer_norm_gamma_backprop(const Tensor& x, const Tensor& dy, double epsilon) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> dout = dy.to_vector<double>();
  const auto d = static_cast<std::size_t>(x.shape()[-1]);
  std::vector<double> out(d, 0.0);
  for (std::size_t row = 0; row < v.size() / d; ++row) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += v[row * d + i] / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += std::pow(v[row * d + i] - mean, 2) / static_cast<double>(d);
    const double rstd = 1.0 / std::sqrt(var + epsilon);
    for (std::size_t i = 0; i < d; ++i) out[i] += dout[row * d + i] * (v[row * d + i] - mean) * rstd;
  }
  return float_tensor(out, Shape{static_cast<std::int64_t>(d)});
}

// dx = rstd * (dy*gamma - mean(dy*gamma) - xhat * mean(dy*gamma*xhat)), row by row.
Tensor reference_layer_norm_backprop(const Tensor& x, const Tensor& gamma, const Tensor& dy, double epsilon) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> g = gamma.to_vector<double>();
  std::vector<double> dout = dy.to_vector<double>();
  const std::size_t d = g.size();
  std::vector<double> out(v.size());
  for (std::size_t row = 0; row < v.size() / d; ++row) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < d; ++i) mean += v[row * d + i] / static_cast<double>(d);
    for (std::size_t i = 0; i < d; ++i) var += std::pow(v[row * d + i] - mean, 2) / static_cast<double>(d);
    const double rstd = 1.0 / std::sqrt(var + epsilon);
    double mean_gg = 0, mean_gg_xhat = 0;
    for (std::size_t i = 0; i < d; ++i) {
      const double gg = dout[row * d + i] * g[i];
      mean_gg += gg / static_cast<double>(d);
      mean_gg_xhat += gg * (v[row * d + i] - mean) * rstd / static_cast<double>(d);
    }
    for (std::size_t i = 0; i < d; ++i) {
      const double xhat = (v[row * d + i] - mean) * rstd;
      out[row * d + i] = rstd * (dout[row * d + i] * g[i] - mean_gg - xhat * mean_gg_xhat);
    }
  }
  return float_tensor(out, x.shape());
}

Tensor reference_dropout(const Tensor& x, double rate, const Tensor& key_tensor) {
  const random::Key key = random::key_from_tensor(key_tensor);
  std::vector<double> v = x.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = random::uniform_at(key, i) >= rate ? v[i] / (1.0 - rate) : 0.0;
  }
  return float_tensor(v, x.shape());
}

OpCase nn_case(OpId op, std::string label, std::function<Inputs()> make_inputs,
               std::function<Tensor(const Inputs&)> run, std::function<Tensor(const Inputs&)> reference) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = std::move(make_inputs);
  c.run = std::move(run);
  c.reference = std::move(reference);
  return c;
}

std::vector<OpCase> nn_cases() {
  std::vector<OpCase> cases;

  cases.push_back(nn_case(
      OpId::softmax, "softmax_last_axis",
      [] {
        return Inputs{uniform_tensor({3, 5}, 1, -2, 2)};
      },
      [](const Inputs& in) { return ops::softmax(in[0]); },
      [](const Inputs& in) { return reference_softmax(in[0], 1, false); }));
  cases.push_back(nn_case(
      OpId::softmax, "softmax_axis0",
      [] {
        return Inputs{uniform_tensor({4, 3}, 2, -2, 2)};
      },
      [](const Inputs& in) { return ops::softmax(in[0], 0); },
      [](const Inputs& in) { return reference_softmax(in[0], 0, false); }));
  cases.push_back(nn_case(
      OpId::log_softmax, "log_softmax_last_axis",
      [] {
        return Inputs{uniform_tensor({3, 5}, 3, -2, 2)};
      },
      [](const Inputs& in) { return ops::log_softmax(in[0]); },
      [](const Inputs& in) { return reference_softmax(in[0], 1, true); }));
  cases.push_back(nn_case(
      OpId::log_softmax, "log_softmax_middle_axis",
      [] {
        return Inputs{uniform_tensor({2, 3, 4}, 4, -2, 2)};
      },
      [](const Inputs& in) { return ops::log_softmax(in[0], -2); },
      [](const Inputs& in) { return reference_softmax(in[0], 1, true); }));

  cases.push_back(nn_case(
      OpId::softmax_cross_entropy, "softmax_cross_entropy_int64_ignored",
      [] {
        return Inputs{uniform_tensor({4, 5}, 5, -2, 2), Tensor::from_vector<std::int64_t>({1, -100, 4, 0}, {4})};
      },
      [](const Inputs& in) { return ops::sparse_softmax_cross_entropy(in[0], in[1]); },
      [](const Inputs& in) { return reference_cross_entropy(in[0], in[1], -100); }));
  cases.push_back(nn_case(
      OpId::softmax_cross_entropy, "softmax_cross_entropy_int32_rank3",
      [] {
        return Inputs{uniform_tensor({2, 3, 4}, 6, -2, 2),
                      Tensor::from_vector<std::int32_t>({3, 0, -100, 2, 1, 3}, {2, 3})};
      },
      [](const Inputs& in) { return ops::sparse_softmax_cross_entropy(in[0], in[1]); },
      [](const Inputs& in) { return reference_cross_entropy(in[0], in[1], -100); }));
  // An ignore_index inside [0, C): that class's rows must get zero loss and zero gradient.
  cases.push_back(nn_case(
      OpId::softmax_cross_entropy, "softmax_cross_entropy_ignore_index_in_range",
      [] {
        return Inputs{uniform_tensor({3, 4}, 7, -2, 2), Tensor::from_vector<std::int64_t>({0, 2, 3}, {3})};
      },
      [](const Inputs& in) { return ops::sparse_softmax_cross_entropy(in[0], in[1], {.ignore_index = 2}); },
      [](const Inputs& in) { return reference_cross_entropy(in[0], in[1], 2); }));
  // Its gradient checks make the loss's second derivative checked too.
  cases.push_back(nn_case(
      OpId::softmax_cross_entropy_backprop, "softmax_cross_entropy_backprop_int64_ignored",
      [] {
        return Inputs{uniform_tensor({4, 5}, 18, -2, 2), Tensor::from_vector<std::int64_t>({1, -100, 4, 0}, {4}),
                      uniform_tensor({4}, 19, -1, 1)};
      },
      [](const Inputs& in) { return ops::sparse_softmax_cross_entropy_backprop(in[0], in[1], in[2]); },
      [](const Inputs& in) { return reference_cross_entropy_backprop(in[0], in[1], in[2], -100); }));
  cases.push_back(nn_case(
      OpId::softmax_cross_entropy_backprop, "softmax_cross_entropy_backprop_int32_rank3",
      [] {
        return Inputs{uniform_tensor({2, 3, 4}, 20, -2, 2),
                      Tensor::from_vector<std::int32_t>({3, 0, 2, 2, 1, 3}, {2, 3}),
                      uniform_tensor({2, 3}, 21, 0.5, 2)};
      },
      [](const Inputs& in) {
        return ops::sparse_softmax_cross_entropy_backprop(in[0], in[1], in[2], {.ignore_index = 2});
      },
      [](const Inputs& in) { return reference_cross_entropy_backprop(in[0], in[1], in[2], 2); }));

  cases.push_back(nn_case(
      OpId::layer_norm, "layer_norm_affine",
      [] {
        return Inputs{uniform_tensor({3, 6}, 8, -2, 2), uniform_tensor({6}, 9, 0.5, 1.5),
                      uniform_tensor({6}, 10, -0.5, 0.5)};
      },
      [](const Inputs& in) { return ops::layer_norm(in[0], in[1], in[2], {.epsilon = 1e-5}); },
      [](const Inputs& in) { return reference_layer_norm(in[0], in[1], in[2], 1e-5); }));
  cases.push_back(nn_case(
      OpId::layer_norm, "layer_norm_rank3_default_epsilon",
      [] {
        return Inputs{uniform_tensor({2, 2, 4}, 11, -1, 3), uniform_tensor({4}, 12, -1.5, 1.5),
                      uniform_tensor({4}, 13, -1, 1)};
      },
      [](const Inputs& in) { return ops::layer_norm(in[0], in[1], in[2]); },
      [](const Inputs& in) { return reference_layer_norm(in[0], in[1], in[2], 1e-3); }));

  // Values in [4, 6]: rows whose mean is far from zero, so the result depends on centering first.
  OpCase backprop = nn_case(
      OpId::layer_norm_backprop, "layer_norm_backprop_rank3",
      [] {
        return Inputs{uniform_tensor({2, 3, 5}, 15, 4, 6), uniform_tensor({5}, 16, -1.5, 1.5),
                      uniform_tensor({2, 3, 5}, 17, -1, 1)};
      },
      [](const Inputs& in) { return ops::layer_norm_backprop(in[0], in[1], in[2], {.epsilon = 1e-5}); },
      [](const Inputs& in) { return reference_layer_norm_backprop(in[0], in[1], in[2], 1e-5); });
  backprop.no_gradient_because = "not differentiable: Kestrel differentiates layer_norm once only";
  cases.push_back(std::move(backprop));
  // 300 rows of 20: several blocks of rows, each with its own partial sum.
  OpCase gamma_backprop = nn_case(
      OpId::layer_norm_gamma_backprop, "layer_norm_gamma_backprop_rank3",
      [] {
        return Inputs{uniform_tensor({3, 100, 20}, 18, 4, 6), uniform_tensor({3, 100, 20}, 19, -1, 1)};
      },
      [](const Inputs& in) { return ops::layer_norm_gamma_backprop(in[0], in[1], {.epsilon = 1e-5}); },
      [](const Inputs& in) { return reference_layer_norm_gamma_backprop(in[0], in[1], 1e-5); });
  gamma_backprop.no_gradient_because = "not differentiable: Kestrel differentiates layer_norm once only";
  cases.push_back(std::move(gamma_backprop));

  cases.push_back(nn_case(
      OpId::dropout, "dropout_rate_half",
      [] {
        return Inputs{uniform_tensor({4, 8}, 14, -2, 2), random::key_tensor(random::Key(1234))};
      },
      [](const Inputs& in) { return ops::dropout(in[0], 0.5, in[1]); },
      [](const Inputs& in) { return reference_dropout(in[0], 0.5, in[1]); }));

  // A key with its top bit set and a large step: the op must fold all 64 bits of both.
  OpCase fold_in = nn_case(
      OpId::random_fold_in, "random_fold_in_step",
      [] {
        return Inputs{random::key_tensor(random::Key(0x9E3779B97F4A7C15ull)),
                      Tensor::from_vector<std::int64_t>({(std::int64_t{1} << 40) + 3}, Shape{})};
      },
      [](const Inputs& in) { return random::fold_in(in[0], in[1]); },
      [](const Inputs& in) {
        const auto data = static_cast<std::uint64_t>(in[1].to_vector<std::int64_t>()[0]);
        return random::key_tensor(random::key_from_tensor(in[0]).fold_in(data));
      });
  fold_in.no_gradient_because = "random_fold_in: int64 key and data, nothing to differentiate";
  cases.push_back(std::move(fold_in));
  return cases;
}

KESTREL_REGISTER_OP_CASES(nn_cases);

}  // namespace
}  // namespace kestrel::testing
