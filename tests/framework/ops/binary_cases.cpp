// Op table entries for the binary elementwise ops, comparisons and where.
#include <cmath>

#include "framework/ops/elementwise.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

using BinaryFn = double (*)(double, double);

/// Naive broadcasting reference: walks output indices and maps them into each input.
Tensor broadcast_reference(const std::vector<Tensor>& in, const std::function<double(const std::vector<double>&)>& fn,
                           DType dtype = DType::float32) {
  Shape out;
  for (const Tensor& t : in) {
    int rank = std::max(out.rank(), t.rank());
    Shape next;
    for (int d = 0; d < rank; ++d) {
      int io = out.rank() - rank + d, it = t.rank() - rank + d;
      std::int64_t a = io >= 0 ? out[io] : 1, b = it >= 0 ? t.shape()[it] : 1;
      next.push_back(a == 1 ? b : a);
    }
    out = next;
  }
  std::vector<std::vector<double>> values;
  for (const Tensor& t : in) values.push_back(t.to_vector<double>());
  return tensor_from_index_fn(
      out,
      [&](const std::vector<std::int64_t>& index) {
        std::vector<double> args;
        for (std::size_t k = 0; k < in.size(); ++k) {
          const Shape& s = in[k].shape();
          std::int64_t flat = 0;
          for (int d = 0; d < s.rank(); ++d) {
            std::int64_t i = index[static_cast<std::size_t>(out.rank() - s.rank() + d)];
            flat = flat * s[d] + (s[d] == 1 ? 0 : i);
          }
          args.push_back(values[k][static_cast<std::size_t>(flat)]);
        }
        return fn(args);
      },
      dtype);
}

OpCase binary_case(OpId op, std::string label, Shape a, Shape b, Tensor (*run)(const Tensor&, const Tensor&),
                   BinaryFn fn, double lo = -1.0, double hi = 1.0, double b_lo = -1.0, double b_hi = 1.0) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = [=] { return Inputs{uniform_tensor(a, 1, lo, hi), uniform_tensor(b, 2, b_lo, b_hi)}; };
  c.run = [run](const Inputs& x) { return run(x[0], x[1]); };
  c.reference = [fn](const Inputs& x) {
    return broadcast_reference(x, [fn](const std::vector<double>& v) { return fn(v[0], v[1]); });
  };
  return c;
}

/// Comparison inputs drawn from a few integers, so equal pairs occur.
OpCase comparison_case(OpId op, Tensor (*run)(const Tensor&, const Tensor&), bool (*fn)(double, double)) {
  OpCase c;
  c.op = op;
  c.label = std::string(op_name(op)) + "_broadcast";
  c.make_inputs = [] {
    Tensor a = float_tensor({0, 1, 2, 1, 0, 2}, {2, 3});
    Tensor b = float_tensor({1, 1, 0}, {3});
    return Inputs{a, b};
  };
  c.run = [run](const Inputs& x) { return run(x[0], x[1]); };
  c.reference = [fn](const Inputs& x) {
    return broadcast_reference(x, [fn](const std::vector<double>& v) { return fn(v[0], v[1]) ? 1.0 : 0.0; });
  };
  c.no_gradient_because = "comparison: bool output";
  return c;
}

std::vector<OpCase> binary_cases() {
  std::vector<OpCase> cases;
  auto add = [](double a, double b) { return a + b; };
  auto sub = [](double a, double b) { return a - b; };
  auto mul = [](double a, double b) { return a * b; };
  auto div = [](double a, double b) { return a / b; };
  cases.push_back(binary_case(OpId::add, "add_same_shape", {2, 3}, {2, 3}, ops::add, add));
  cases.push_back(binary_case(OpId::add, "add_row_broadcast", {4, 3}, {3}, ops::add, add));
  cases.push_back(binary_case(OpId::add, "add_both_broadcast", {2, 1, 3}, {4, 1}, ops::add, add));
  cases.push_back(binary_case(OpId::add, "add_scalar", {2, 3}, {}, ops::add, add));
  cases.push_back(binary_case(OpId::subtract, "subtract_column_broadcast", {3, 4}, {3, 1}, ops::subtract, sub));
  cases.push_back(binary_case(OpId::subtract, "subtract_scalar_first", {}, {3, 4}, ops::subtract, sub));
  cases.push_back(binary_case(OpId::multiply, "multiply_same_shape", {3, 4}, {3, 4}, ops::multiply, mul));
  cases.push_back(binary_case(OpId::multiply, "multiply_middle_broadcast", {2, 3, 4}, {2, 1, 4}, ops::multiply, mul));
  cases.push_back(binary_case(OpId::divide, "divide_broadcast", {2, 3}, {3}, ops::divide, div, -1, 1, 0.5, 2.0));
  cases.push_back(binary_case(OpId::maximum, "maximum_broadcast", {3, 4}, {4}, ops::maximum,
                              [](double a, double b) { return a >= b ? a : b; }));
  cases.push_back(binary_case(OpId::minimum, "minimum_same_shape", {3, 4}, {3, 4}, ops::minimum,
                              [](double a, double b) { return a <= b ? a : b; }));
  cases.push_back(binary_case(
      OpId::pow, "pow_broadcast", {2, 3}, {3}, ops::pow, [](double a, double b) { return std::pow(a, b); }, 0.5, 2.0,
      -1.0, 2.0));
  cases.back().tolerance = 1e-5;

  cases.push_back(comparison_case(OpId::equal, ops::equal, [](double a, double b) { return a == b; }));
  cases.push_back(comparison_case(OpId::not_equal, ops::not_equal, [](double a, double b) { return a != b; }));
  cases.push_back(comparison_case(OpId::less, ops::less, [](double a, double b) { return a < b; }));
  cases.push_back(comparison_case(OpId::less_equal, ops::less_equal, [](double a, double b) { return a <= b; }));
  cases.push_back(comparison_case(OpId::greater, ops::greater, [](double a, double b) { return a > b; }));
  cases.push_back(comparison_case(OpId::greater_equal, ops::greater_equal, [](double a, double b) { return a >= b; }));

  OpCase where;
  where.op = OpId::where;
  where.label = "where_broadcast";
  where.make_inputs = [] {
    Tensor cond = Tensor::from_vector<bool>({true, false, false, true, true, false}, {2, 3});
    return Inputs{cond, uniform_tensor({2, 3}, 3), uniform_tensor({3}, 4)};
  };
  where.run = [](const Inputs& x) { return ops::where(x[0], x[1], x[2]); };
  where.reference = [](const Inputs& x) {
    return broadcast_reference(x, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
  };
  cases.push_back(where);

  OpCase int_add;
  int_add.op = OpId::add;
  int_add.label = "add_int64";
  int_add.make_inputs = [] {
    return Inputs{Tensor::from_vector<std::int64_t>({1, -2, 3}, {3}), Tensor::from_vector<std::int64_t>({10}, {1})};
  };
  int_add.run = [](const Inputs& x) { return ops::add(x[0], x[1]); };
  int_add.reference = [](const Inputs& x) {
    return broadcast_reference(
        x, [](const std::vector<double>& v) { return v[0] + v[1]; }, DType::int64);
  };
  int_add.no_gradient_because = "integer inputs";
  cases.push_back(int_add);

  OpCase bf16_mul;
  bf16_mul.op = OpId::multiply;
  bf16_mul.label = "multiply_bfloat16_computes_in_float32";
  bf16_mul.make_inputs = [] {
    return Inputs{ops::cast(float_tensor({1.5, -2.25, 3.0}, {3}), DType::bfloat16),
                  ops::cast(float_tensor({2.0, 0.5, -1.5}, {3}), DType::bfloat16)};
  };
  bf16_mul.run = [](const Inputs& x) { return ops::multiply(x[0], x[1]); };
  bf16_mul.reference = [](const Inputs& x) { return float_tensor({3.0, -1.125, -4.5}, {3}); };
  bf16_mul.no_gradient_because = "bfloat16 is too coarse for finite differences";
  cases.push_back(bf16_mul);
  return cases;
}

KESTREL_REGISTER_OP_CASES(binary_cases);

}  // namespace
}  // namespace kestrel::testing
