// --precision: the Keras precision policy a tutorial's model is made under.
//
//   std::string precision = "float32";
//   tutorials::add_precision_flag(cli, precision);
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
//   mixed_precision::set_global_policy(precision);   // before the model is made
#pragma once

#include <string>

#include "programs/command_line.h"

namespace kestrel::tutorials {

/// Registers --precision float32|mixed_bfloat16|bfloat16, bound to `precision` (its value is the default).
void add_precision_flag(programs::CommandLine& cli, std::string& precision);

}  // namespace kestrel::tutorials
