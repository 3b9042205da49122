// IDX files from arbitrary bytes (plain, or gzip when they start with gzip's magic), read as each
// dtype: the float-to-integer conversions are checked as well as the header.
#include <cstdint>

#include "datasets/io/idx.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input_file(fuzz::bytes(data, size), ".idx");
  for (const DType dtype : {DType::float32, DType::bfloat16, DType::int32, DType::int64, DType::bool_}) {
    try {
      datasets::read_idx(path, dtype);
    } catch (const Error&) {
    }
  }
  return 0;
}
