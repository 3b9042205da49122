// Values read from a weights file for a model's variables, before any is assigned.
//
//   Values values;
//   values.push_back(read_value(dataset, variable));   // in the variable's dtype
//   assign_values(values, "model.weights.h5");          // all at once, conversions logged
//
// A value keeps the dtype its variable has, whatever the file stores: a float32 checkpoint loads
// into a bfloat16-policy model (rounded to nearest even) and a bfloat16 one into a float32 model
// (exactly), and optimizer slots keep their own dtype. Each such conversion is logged once per load.
#pragma once

#include <string>
#include <vector>

#include "framework/core/variable.h"
#include "framework/saving/hdf5_handles.h"

namespace kestrel::saving {

struct ReadValue {
  Variable variable;
  Tensor value;            ///< in variable.dtype()
  std::string file_dtype;  ///< what the file stores ("float32", "bfloat16", "float64", ...)
};
using Values = std::vector<ReadValue>;

/// The dataset's values in variable's dtype.
ReadValue read_value(const h5::Dataset& dataset, const Variable& variable);

/// Assigns every value; logs, once, how many were stored in another dtype than their variable's.
void assign_values(const Values& values, const std::string& path);

}  // namespace kestrel::saving
