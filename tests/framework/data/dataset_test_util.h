// Small helpers for the data tests: datasets of integers and what they yield.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/dataset.h"

namespace kestrel::data::testing_util {

/// The first value of each element's `key` tensor, in iteration order.
inline std::vector<std::int64_t> firsts(const Dataset& ds, const std::string& key = "value") {
  std::vector<std::int64_t> out;
  for (const Element& e : ds) out.push_back(e.tensor(key).to_vector<std::int64_t>().at(0));
  return out;
}

/// Element i is {"ids": int64 [lengths[i]] filled with i+1, "label": i}.
inline Dataset ragged(const std::vector<std::int64_t>& lengths) {
  std::vector<Element> elements;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    std::vector<std::int64_t> ids(static_cast<std::size_t>(lengths[i]), static_cast<std::int64_t>(i) + 1);
    elements.push_back(Element{{"ids", Tensor::from_vector(ids, {lengths[i]})},
                               {"label", Tensor::from_vector<std::int64_t>({static_cast<std::int64_t>(i)}, Shape())}});
  }
  return Dataset::from_generator(
      [elements]() -> Generator {
        return [elements, i = std::size_t{0}]() mutable -> std::optional<Element> {
          if (i == elements.size()) return std::nullopt;
          return elements[i++];
        };
      },
      {{"ids", ValueSpec{{-1}, DType::int64, false}}, {"label", ValueSpec{{}, DType::int64, false}}},
      static_cast<std::int64_t>(lengths.size()));
}

}  // namespace kestrel::data::testing_util
