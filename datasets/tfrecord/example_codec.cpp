#include "datasets/tfrecord/example_codec.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "framework/core/error.h"

namespace kestrel::data {
namespace {

void fill_feature(example::Feature& f, const Value& value, const std::string& key) {
  if (const auto* s = std::get_if<Strings>(&value)) {
    auto* list = f.mutable_bytes_list();
    for (const std::string& v : s->values()) list->add_value(v);
    return;
  }
  const Tensor& t = std::get<Tensor>(value);
  if (!t.defined()) {
    throw ValueError(op_message("serialize_example", "value '" + key + "' is an undefined tensor"));
  }
  switch (t.dtype()) {
    case DType::int64:
    case DType::int32:
    case DType::bool_: {
      const std::vector<std::int64_t> v = t.to_vector<std::int64_t>();
      f.mutable_int64_list()->mutable_value()->Add(v.begin(), v.end());
      return;
    }
    case DType::float32:
    case DType::bfloat16: {
      const std::vector<float> v = t.to_vector<float>();
      f.mutable_float_list()->mutable_value()->Add(v.begin(), v.end());
      return;
    }
  }
}

}  // namespace

example::Example example_from_element(const Element& e) {
  example::Example ex;
  auto& features = *ex.mutable_features()->mutable_feature();
  for (const auto& [key, value] : e.values()) fill_feature(features[key], value, key);
  return ex;
}

std::string serialize_example(const example::Example& example) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    // Map order is otherwise unspecified; sorted keys make the bytes a function of the content.
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }
  return out;
}

std::string serialize_example(const Element& e) { return serialize_example(example_from_element(e)); }

Element element_from_example(const example::Example& example) {
  std::map<std::string, Value> values;
  for (const auto& [key, f] : example.features().feature()) {
    switch (f.kind_case()) {
      case example::Feature::kBytesList: {
        const auto& list = f.bytes_list().value();
        values.emplace(key, Strings(std::vector<std::string>(list.begin(), list.end())));
        break;
      }
      case example::Feature::kInt64List: {
        const auto& list = f.int64_list().value();
        const std::vector<std::int64_t> v(list.begin(), list.end());
        values.emplace(key, Tensor::from_vector<std::int64_t>(v, {static_cast<std::int64_t>(v.size())}));
        break;
      }
      case example::Feature::kFloatList: {
        const auto& list = f.float_list().value();
        const std::vector<float> v(list.begin(), list.end());
        values.emplace(key, Tensor::from_vector<float>(v, {static_cast<std::int64_t>(v.size())}));
        break;
      }
      case example::Feature::KIND_NOT_SET: values.emplace(key, Tensor::zeros({0}, DType::float32)); break;
    }
  }
  return Element(std::move(values));
}

example::Example parse_example_proto(std::string_view serialized) {
  example::Example ex;
  if (serialized.size() > INT_MAX || !ex.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    throw ValueError(op_message("parse_example", "the record (" + std::to_string(serialized.size()) +
                                                     " bytes) is not a serialized tf.train.Example; check that "
                                                     "the file holds Examples and not other records"));
  }
  return ex;
}

Element decode_example(std::string_view serialized) { return element_from_example(parse_example_proto(serialized)); }

}  // namespace kestrel::data
