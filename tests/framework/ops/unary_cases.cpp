// Op table entries for the unary elementwise ops, activations and cast.
#include <cmath>
#include <numbers>

#include "framework/ops/elementwise.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

OpCase unary_case(OpId op, std::string label, Tensor (*run)(const Tensor&), double (*fn)(double), double lo = -2.0,
                  double hi = 2.0) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = [=] { return Inputs{uniform_tensor({3, 5}, 11, lo, hi)}; };
  c.run = [run](const Inputs& x) { return run(x[0]); };
  c.reference = [fn](const Inputs& x) {
    std::vector<double> v = x[0].to_vector<double>();
    for (double& e : v) e = fn(e);
    return float_tensor(v, x[0].shape());
  };
  return c;
}

double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

double gelu_exact_slope(double x) {
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)) + x * pdf;
}
double gelu_tanh_slope(double x) {
  const double s = std::sqrt(2.0 / std::numbers::pi), k = 0.044715;
  const double t = std::tanh(s * (x + k * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * s * (1.0 + 3.0 * k * x * x);
}

// gelu_backprop(x, dy) = dy * slope(x); its own gradient checks the second derivative.
OpCase gelu_backprop_case(std::string label, bool approximate, double (*slope)(double)) {
  OpCase c;
  c.op = OpId::gelu_backprop;
  c.label = std::move(label);
  c.make_inputs = [] { return Inputs{uniform_tensor({3, 5}, 11, -3, 3), uniform_tensor({3, 5}, 12, -2, 2)}; };
  c.run = [approximate](const Inputs& in) { return ops::gelu_backprop(in[0], in[1], {.approximate = approximate}); };
  c.reference = [slope](const Inputs& in) {
    std::vector<double> x = in[0].to_vector<double>(), dy = in[1].to_vector<double>();
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = dy[i] * slope(x[i]);
    return float_tensor(x, in[0].shape());
  };
  return c;
}

std::vector<OpCase> unary_cases() {
  std::vector<OpCase> cases;
  cases.push_back(unary_case(OpId::negative, "negative", ops::negative, [](double x) { return -x; }));
  cases.push_back(unary_case(OpId::abs, "abs", ops::abs, [](double x) { return std::fabs(x); }));
  cases.push_back(unary_case(OpId::exp, "exp", ops::exp, [](double x) { return std::exp(x); }));
  cases.push_back(unary_case(
      OpId::log, "log", ops::log, [](double x) { return std::log(x); }, 0.3, 3.0));
  cases.push_back(unary_case(OpId::tanh, "tanh", ops::tanh, [](double x) { return std::tanh(x); }));
  cases.push_back(unary_case(
      OpId::sqrt, "sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }, 0.3, 3.0));
  cases.push_back(unary_case(
      OpId::rsqrt, "rsqrt", ops::rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 0.3, 3.0));
  cases.push_back(unary_case(OpId::erf, "erf", ops::erf, [](double x) { return std::erf(x); }));
  cases.push_back(
      unary_case(OpId::sigmoid, "sigmoid", ops::sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }));
  cases.push_back(unary_case(OpId::relu, "relu", ops::relu, [](double x) { return x > 0 ? x : 0.0; }));

  OpCase gelu = unary_case(
      OpId::gelu, "gelu_erf", [](const Tensor& x) { return ops::gelu(x); }, gelu_exact, -3, 3);
  cases.push_back(gelu);
  OpCase gelu_approx = unary_case(
      OpId::gelu, "gelu_tanh", [](const Tensor& x) { return ops::gelu(x, {.approximate = true}); }, gelu_tanh, -3, 3);
  cases.push_back(gelu_approx);
  cases.push_back(gelu_backprop_case("gelu_backprop_erf", false, gelu_exact_slope));
  cases.push_back(gelu_backprop_case("gelu_backprop_tanh", true, gelu_tanh_slope));

  OpCase negate_int;
  negate_int.op = OpId::negative;
  negate_int.label = "negative_int32";
  negate_int.make_inputs = [] { return Inputs{Tensor::from_vector<std::int32_t>({3, -7, 0}, {3})}; };
  negate_int.run = [](const Inputs& x) { return ops::negative(x[0]); };
  negate_int.reference = [](const Inputs&) {
    return tensor_from_index_fn(
        {3},
        [](auto& i) {
          return std::vector<double>{-3, 7, 0}[static_cast<std::size_t>(i[0])];
        },
        DType::int32);
  };
  negate_int.no_gradient_because = "integer input";
  cases.push_back(negate_int);

  OpCase to_int;
  to_int.op = OpId::cast;
  to_int.label = "cast_float32_to_int32_truncates";
  to_int.make_inputs = [] { return Inputs{float_tensor({1.7, -2.5, 0.2, 3.0}, {2, 2})}; };
  to_int.run = [](const Inputs& x) { return ops::cast(x[0], DType::int32); };
  to_int.reference = [](const Inputs&) { return Tensor::from_vector<std::int32_t>({1, -2, 0, 3}, {2, 2}); };
  to_int.no_gradient_because = "integer output";
  cases.push_back(to_int);

  OpCase to_bf16;
  to_bf16.op = OpId::cast;
  to_bf16.label = "cast_float32_to_bfloat16_rounds_to_nearest_even";
  to_bf16.make_inputs = [] { return Inputs{float_tensor({1.0, 1.00390625, 1.01171875, -3.0}, {4})}; };
  to_bf16.run = [](const Inputs& x) { return ops::cast(ops::cast(x[0], DType::bfloat16), DType::float32); };
  to_bf16.reference = [](const Inputs&) { return float_tensor({1.0, 1.0, 1.015625, -3.0}, {4}); };
  to_bf16.no_gradient_because = "bfloat16 rounding hides finite differences (cast_gradient test covers it)";
  cases.push_back(to_bf16);

  OpCase to_bool;
  to_bool.op = OpId::cast;
  to_bool.label = "cast_int64_to_bool";
  to_bool.make_inputs = [] { return Inputs{Tensor::from_vector<std::int64_t>({0, 5, -1}, {3})}; };
  to_bool.run = [](const Inputs& x) { return ops::cast(x[0], DType::bool_); };
  to_bool.reference = [](const Inputs&) { return float_tensor({0, 1, 1}, {3}); };
  to_bool.no_gradient_because = "integer input";
  cases.push_back(to_bool);
  return cases;
}

KESTREL_REGISTER_OP_CASES(unary_cases);

}  // namespace
}  // namespace kestrel::testing
