#include "tutorials/common/test_metrics.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace kestrel::tutorials {

void write_test_metrics(const std::string& path, const Logs& logs) {
  nlohmann::ordered_json metrics;
  for (const auto& [name, value] : logs) metrics["test_" + name] = value;
  std::ofstream file(path);
  file << metrics.dump(2) << "\n";
  if (!file) throw IOError("cannot write the test metrics to '" + path + "'");
}

}  // namespace kestrel::tutorials
