// The JSON form of tf.train.Example that kestrel-records reads (one object per line), from
// arbitrary text; what it accepts is written back as JSON and as an Example.
#include <cstdint>

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/example_json.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const example::Example ex = data::example_from_json(fuzz::bytes(data, size));
    data::example_to_json(ex);
    data::decode_example(data::serialize_example(ex));
  } catch (const Error&) {
  }
  return 0;
}
