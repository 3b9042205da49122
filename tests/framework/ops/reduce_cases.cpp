// Op table entries for the reductions (sum, max) and the composites built on them.
#include <algorithm>
#include <limits>

#include "framework/ops/reduce.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

enum class Kind { sum, max, mean };

/// Naive reduction: every output element scans the input for indices that map to it.
Tensor reduce_reference(const Tensor& x, std::vector<int> axes, bool keepdims, Kind kind) {
  const int rank = x.rank();
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int& a : axes) a = a < 0 ? a + rank : a;
  auto reduced = [&](int d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  Shape kept, out_shape;
  for (int d = 0; d < rank; ++d) {
    kept.push_back(reduced(d) ? 1 : x.shape()[d]);
    if (!reduced(d) || keepdims) out_shape.push_back(reduced(d) ? 1 : x.shape()[d]);
  }
  std::vector<double> values = x.to_vector<double>();
  std::vector<double> acc(static_cast<std::size_t>(kept.numel()),
                          kind == Kind::max ? -std::numeric_limits<double>::infinity() : 0.0);
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  double count = static_cast<double>(x.numel()) / static_cast<double>(kept.numel());
  for (double v : values) {
    std::int64_t flat = 0;
    for (int d = 0; d < rank; ++d) flat = flat * kept[d] + (reduced(d) ? 0 : index[static_cast<std::size_t>(d)]);
    double& a = acc[static_cast<std::size_t>(flat)];
    a = kind == Kind::max ? std::max(a, v) : a + v;
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[static_cast<std::size_t>(d)] < x.shape()[d]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  if (kind == Kind::mean) {
    for (double& a : acc) a /= count;
  }
  return float_tensor(acc, out_shape);
}

OpCase reduce_case(OpId op, std::string label, Shape shape, std::vector<int> axes, bool keepdims, Kind kind) {
  OpCase c;
  c.op = op;
  c.label = std::move(label);
  c.make_inputs = [=] { return Inputs{uniform_tensor(shape, 21)}; };
  c.run = [=](const Inputs& x) {
    ops::ReduceOptions options{.axes = axes, .keepdims = keepdims};
    if (kind == Kind::sum) return ops::sum(x[0], options);
    if (kind == Kind::max) return ops::max(x[0], options);
    return ops::mean(x[0], options);
  };
  c.reference = [=](const Inputs& x) { return reduce_reference(x[0], axes, keepdims, kind); };
  return c;
}

std::vector<OpCase> reduce_cases() {
  std::vector<OpCase> cases;
  cases.push_back(reduce_case(OpId::sum, "sum_all", {3, 4}, {}, false, Kind::sum));
  cases.push_back(reduce_case(OpId::sum, "sum_last_axis_keepdims", {3, 4}, {-1}, true, Kind::sum));
  cases.push_back(reduce_case(OpId::sum, "sum_leading_axis", {5, 3}, {0}, false, Kind::sum));
  cases.push_back(reduce_case(OpId::sum, "sum_non_adjacent_axes", {2, 3, 4}, {0, 2}, false, Kind::sum));
  cases.push_back(reduce_case(OpId::sum, "mean_middle_axis", {2, 3, 4}, {1}, false, Kind::mean));
  cases.push_back(reduce_case(OpId::max, "max_last_axis", {3, 5}, {-1}, false, Kind::max));
  cases.push_back(reduce_case(OpId::max, "max_all_keepdims", {2, 3, 2}, {}, true, Kind::max));
  cases.push_back(reduce_case(OpId::max, "max_non_adjacent_axes", {2, 3, 4}, {0, 2}, true, Kind::max));

  OpCase sum_to;
  sum_to.op = OpId::sum;
  sum_to.label = "sum_to_undoes_broadcast";
  sum_to.make_inputs = [] { return Inputs{uniform_tensor({2, 3, 4}, 22)}; };
  sum_to.run = [](const Inputs& x) { return ops::sum_to(x[0], {3, 1}); };
  sum_to.reference = [](const Inputs& x) {
    Tensor r = reduce_reference(x[0], {0, 2}, true, Kind::sum);
    return float_tensor(r.to_vector<double>(), {3, 1});
  };
  cases.push_back(sum_to);

  OpCase sum_int;
  sum_int.op = OpId::sum;
  sum_int.label = "sum_int32_rows";
  sum_int.make_inputs = [] { return Inputs{Tensor::from_vector<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3})}; };
  sum_int.run = [](const Inputs& x) { return ops::sum(x[0], {.axes = {1}}); };
  sum_int.reference = [](const Inputs&) { return Tensor::from_vector<std::int32_t>({6, 15}, {2}); };
  sum_int.no_gradient_because = "integer input";
  cases.push_back(sum_int);
  return cases;
}

KESTREL_REGISTER_OP_CASES(reduce_cases);

}  // namespace
}  // namespace kestrel::testing
