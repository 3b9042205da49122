// Weight files from arbitrary bytes: load_weights in the Keras 3 layout (".weights.h5") or the
// Keras 2 one (".h5", by order or by name), as the first byte picks.
//
// libhdf5 parses the file; Kestrel checks what it can before handing it over (see
// framework/saving/hdf5_checks.h), and what it cannot is listed there.
#include <cstdint>

#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/hdf5_fuzz_model.h"

using namespace kestrel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const std::unique_ptr<Sequential> model = fuzz::make_hdf5_fuzz_model();
  const std::uint8_t mode = data[0];
  const std::string path =
      fuzz::write_input_file(fuzz::bytes(data + 1, size - 1), (mode & 1) != 0 ? ".weights.h5" : ".h5");
  try {
    model->load_weights(path, {.by_name = (mode & 2) != 0, .skip_mismatch = (mode & 6) == 6});
  } catch (const Error&) {
  }
  return 0;
}
