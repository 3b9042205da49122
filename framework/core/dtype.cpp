#include "framework/core/dtype.h"

#include <string>

#include "framework/core/error.h"

namespace kestrel {

std::size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::bfloat16: return 2;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bool_: return 1;
  }
  return 0;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::bfloat16: return "bfloat16";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bool_: return "bool";
  }
  return "?";
}

DType dtype_from_string(std::string_view name) {
  for (DType d : {DType::float32, DType::bfloat16, DType::int32, DType::int64, DType::bool_}) {
    if (to_string(d) == name) return d;
  }
  throw ValueError("unknown dtype '" + std::string(name) + "': expected one of float32, bfloat16, int32, int64, bool");
}

bool is_floating(DType dtype) { return dtype == DType::float32 || dtype == DType::bfloat16; }
bool is_integer(DType dtype) { return dtype == DType::int32 || dtype == DType::int64; }

}  // namespace kestrel
