#include "tutorials/common/precision_flag.h"

#include "framework/layers/dtype_policy.h"

namespace kestrel::tutorials {

void add_precision_flag(programs::CommandLine& cli, std::string& precision) {
  cli.add_option("--precision", precision,
                 "the dtype policy: float32; mixed_bfloat16 (float32 weights, bfloat16 math); bfloat16 (weights "
                 "too, with the loss and metrics in float32)")
      .choices(mixed_precision::policy_names());
}

}  // namespace kestrel::tutorials
