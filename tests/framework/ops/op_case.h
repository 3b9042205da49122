// The op test table: one entry per op (some ops have several), each checking the op's forward
// pass against a naive reference and its gradient against float64 central differences.
//
// Each family file (binary_cases.cpp, ...) defines a function returning its entries and
// registers it with KESTREL_REGISTER_OP_CASES; op_table_test.cpp runs every entry and fails if
// an op in KESTREL_OPS has none.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "framework/autodiff/gradcheck.h"
#include "framework/core/tensor.h"
#include "framework/ops/op_list.h"

namespace kestrel::testing {

using Inputs = std::vector<Tensor>;

struct OpCase {
  OpId op;
  std::string label;                               ///< unique, e.g. "add_broadcast_row"
  std::function<Inputs()> make_inputs;             ///< small tensors, fixed seeds
  std::function<Tensor(const Inputs&)> run;        ///< calls the public op
  std::function<Tensor(const Inputs&)> reference;  ///< naive loops in double precision
  double tolerance = 1e-5;                         ///< max |got - want| / (1 + |want|)
  /// Gradients are checked for every float32 input unless this names why not
  /// (e.g. "comparison: bool output").
  std::string no_gradient_because;
  GradcheckOptions gradcheck_options = {};
};

using OpCaseFamily = std::vector<OpCase> (*)();
/// Adds a family of cases to the table (use KESTREL_REGISTER_OP_CASES).
bool register_op_cases(OpCaseFamily family);
/// Every registered family's cases.
std::vector<OpCase> all_op_cases();
/// The table, built once: what parameterized tests iterate over.
const std::vector<OpCase>& op_case_table();
/// Every case's label, in table order (the parameters of the table's tests).
std::vector<std::string> op_case_labels();
/// The case with this label.
const OpCase& find_op_case(const std::string& label);

#define KESTREL_REGISTER_OP_CASES(family) \
  [[maybe_unused]] static const bool family##_registered = ::kestrel::testing::register_op_cases(family)

// Helpers for writing references.
/// Uniform values in [lo, hi), a fixed function of seed.
Tensor uniform_tensor(const Shape& shape, std::uint64_t seed, double lo = -1.0, double hi = 1.0);
/// A float32 tensor from doubles computed by a reference.
Tensor float_tensor(const std::vector<double>& values, const Shape& shape);
/// values[i] = fn(multi-index of i), for writing references with indices.
Tensor tensor_from_index_fn(const Shape& shape, const std::function<double(const std::vector<std::int64_t>&)>& fn,
                            DType dtype = DType::float32);

}  // namespace kestrel::testing
