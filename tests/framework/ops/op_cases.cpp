#include "tests/framework/ops/op_case.h"

#include <stdexcept>

#include "framework/core/random.h"

namespace kestrel::testing {

namespace {
std::vector<OpCaseFamily>& families() {
  static std::vector<OpCaseFamily> registered;  // function-local: safe from static init order
  return registered;
}
}  // namespace

bool register_op_cases(OpCaseFamily family) {
  families().push_back(family);
  return true;
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> all;
  for (OpCaseFamily family : families()) {
    for (OpCase& c : family()) all.push_back(std::move(c));
  }
  return all;
}

const std::vector<OpCase>& op_case_table() {
  static const std::vector<OpCase> table = all_op_cases();
  return table;
}

std::vector<std::string> op_case_labels() {
  std::vector<std::string> out;
  for (const OpCase& c : op_case_table()) out.push_back(c.label);
  return out;
}

const OpCase& find_op_case(const std::string& label) {
  for (const OpCase& c : op_case_table()) {
    if (c.label == label) return c;
  }
  throw std::out_of_range("no op case labelled '" + label + "'");
}

Tensor uniform_tensor(const Shape& shape, std::uint64_t seed, double lo, double hi) {
  return random::uniform(shape, random::Key(seed), lo, hi);
}

Tensor float_tensor(const std::vector<double>& values, const Shape& shape) {
  return Tensor::from_vector(std::vector<float>(values.begin(), values.end()), shape);
}

Tensor tensor_from_index_fn(const Shape& shape, const std::function<double(const std::vector<std::int64_t>&)>& fn,
                            DType dtype) {
  std::vector<double> values(static_cast<std::size_t>(shape.numel()));
  std::vector<std::int64_t> index(static_cast<std::size_t>(shape.rank()), 0);
  for (std::size_t flat = 0; flat < values.size(); ++flat) {
    values[flat] = fn(index);
    for (int axis = shape.rank() - 1; axis >= 0; --axis) {
      if (++index[static_cast<std::size_t>(axis)] < shape[axis]) break;
      index[static_cast<std::size_t>(axis)] = 0;
    }
  }
  Tensor as_float = float_tensor(values, shape);
  if (dtype == DType::float32) return as_float;
  std::vector<std::int64_t> ints(values.begin(), values.end());
  Tensor as_int = Tensor::from_vector(ints, shape);
  if (dtype == DType::int64) return as_int;
  std::vector<std::int32_t> narrow(values.begin(), values.end());
  return Tensor::from_vector(narrow, shape);
}

}  // namespace kestrel::testing
