// Prints the highest CPU level this machine runs, for -DKESTREL_HIGHEST_CPU_LEVEL=host
// (cmake/KestrelCpuKernels.cmake compiles and runs it with framework/core/cpu_capability.cpp, so
// the build asks the same question the library asks at start-up).
#include <iostream>

#include "framework/core/cpu_capability.h"

int main() {
  std::cout << kestrel::to_string(kestrel::detected_cpu_capability());
  return 0;
}
