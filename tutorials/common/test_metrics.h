// What every tutorial's --json-out writes: the final test metrics under Keras's names with a
// "test_" prefix, {"test_loss": 0.31, "test_accuracy": 0.89}, for scripts and the smoke tests.
//
//   Logs test_logs = model.evaluate(x_test, y_test);
//   if (!json_out.empty()) tutorials::write_test_metrics(json_out, test_logs);
#pragma once

#include <string>

#include "framework/model/callback.h"

namespace kestrel::tutorials {

/// Writes logs as {"test_<name>": value, ...} to path; throws IOError naming the file on failure.
void write_test_metrics(const std::string& path, const Logs& logs);

}  // namespace kestrel::tutorials
