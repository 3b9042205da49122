# Flags for Kestrel's own targets (kept PRIVATE, so installed headers impose nothing on users).
add_library(kestrel_compile_options INTERFACE)
target_compile_options(kestrel_compile_options INTERFACE
  -Wall -Wextra -Wno-unused-parameter
  # Options aggregates are meant to be written with only the fields that differ from the defaults.
  -Wno-missing-field-initializers
  $<$<CONFIG:Release>:-O3>)
if(KESTREL_NATIVE)
  # 256-bit vectors preferred, as for the AVX-512 kernels (KestrelCpuKernels.cmake): GCC 12 miscompiles
  # some 64-byte basic-block vector stores.
  target_compile_options(kestrel_compile_options INTERFACE -march=native -mprefer-vector-width=256)
endif()
