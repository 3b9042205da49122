// tf.train.Example from arbitrary bytes: decoding, parse_example against a spec of every kind of
// feature, and the JSON form of what was decoded, read back.
#include <cstdint>
#include <string>

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/example_json.h"
#include "datasets/tfrecord/parse_example.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

namespace {

const data::FeatureSpec& spec() {
  static const data::FeatureSpec features{
      {"ids", data::FixedLenFeature{.shape = {2, 2}, .dtype = data::FeatureDType::int64}},
      {"label",
       data::FixedLenFeature{
           .shape = {}, .dtype = data::FeatureDType::int64, .default_value = Tensor::scalar(0, DType::int64)}},
      {"x",
       data::FixedLenFeature{.shape = {3}, .dtype = data::FeatureDType::float32, .default_value = Tensor::scalar(0.5)}},
      {"text",
       data::FixedLenFeature{.shape = {}, .dtype = data::FeatureDType::string, .default_value = data::Strings("none")}},
      {"tags", data::VarLenFeature{.dtype = data::FeatureDType::string}},
      {"weights", data::VarLenFeature{.dtype = data::FeatureDType::float32}},
      {"a", data::VarLenFeature{.dtype = data::FeatureDType::int64}},
  };
  return features;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::bytes(data, size);
  try {
    data::parse_example(input, spec());
  } catch (const Error&) {
  }
  try {
    const example::Example ex = data::parse_example_proto(input);
    data::element_from_example(ex);
    data::example_from_json(data::example_to_json(ex));
  } catch (const Error&) {
  }
  return 0;
}
