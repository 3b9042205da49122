#include "framework/saving/read_values.h"

#include <map>
#include <utility>

#include "framework/logging/logging.h"

namespace kestrel::saving {

ReadValue read_value(const h5::Dataset& dataset, const Variable& variable) {
  return {variable, dataset.read(variable.dtype()), dataset.dtype_name()};
}

void assign_values(const Values& values, const std::string& path) {
  std::map<std::pair<std::string, std::string>, int> conversions;  // (file, model) dtype -> count
  for (const ReadValue& v : values) {
    const std::string model_dtype(to_string(v.variable.dtype()));
    if (v.file_dtype != model_dtype) ++conversions[{v.file_dtype, model_dtype}];
    v.variable.assign(v.value);
  }
  for (const auto& [dtypes, count] : conversions) {
    logging::get("kestrel.saving")
        ->info("'{}': converted {} value(s) stored as {} to the model's {}", path, count, dtypes.first, dtypes.second);
  }
}

}  // namespace kestrel::saving
