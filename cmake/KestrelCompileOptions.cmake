# Flags for Kestrel's own targets (kept PRIVATE, so installed headers impose nothing on users).
# kestrel_common_options holds what every target shares (the warnings, and -march=native when
# KESTREL_NATIVE asks for it); kestrel_compile_options (libraries and programs) and
# kestrel_test_options (tests) add the optimization level.
add_library(kestrel_common_options INTERFACE)
target_compile_options(kestrel_common_options INTERFACE
  -Wall -Wextra -Wno-unused-parameter
  # Options aggregates are meant to be written with only the fields that differ from the defaults.
  -Wno-missing-field-initializers)

add_library(kestrel_compile_options INTERFACE)
target_link_libraries(kestrel_compile_options INTERFACE kestrel_common_options)
target_compile_options(kestrel_compile_options INTERFACE $<$<CONFIG:Release>:-O3>)

# The tests' own code compiles at -O1 in an optimized build. What a test exercises is the
# library, built at the build type's level; the test's fixtures, reference loops and GoogleTest's
# macros are a small part of the suite's running time, and -O1 compiles them about a quarter
# faster than -O3. (A later -O wins, so this overrides the build type's -O3 or -O2.)
add_library(kestrel_test_options INTERFACE)
target_link_libraries(kestrel_test_options INTERFACE kestrel_common_options)
target_compile_options(kestrel_test_options INTERFACE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)

# Flags for the libraries' own code, beyond kestrel_compile_options. A fuzzing build
# (KESTREL_BUILD_FUZZERS) instruments them for coverage feedback: the readers the fuzz targets
# drive live there. Tests and programs do not need it, and instrumenting them costs build time.
add_library(kestrel_library_options INTERFACE)
target_link_libraries(kestrel_library_options INTERFACE kestrel_compile_options)
if(KESTREL_BUILD_FUZZERS)
  target_compile_options(kestrel_library_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
# Flags for code built for the avx512 CPU level (x86-64-v4, see framework/core/cpu_capability.h).
# -mprefer-vector-width=256 keeps GCC's own vectorizer at 256 bits. -mmove-max=128 -mstore-max=128
# keep GCC from copying 32 or 64 bytes as one wide integer: GCC 12.2 miscompiles such copies of
# constants like {1, 1, 1, 0} into {1, 1, 1, 1} (tests/framework/core/avx512_slp_regression_test.cpp);
# -mprefer-vector-width=256 alone does not avoid that. cmake/check_no_wide_slp.sh checks sources
# built with these flags for both. The miscompile is in GCC's x86 backend; clang (which Kestrel's
# sanitizer and fuzzing builds use) has neither it nor the two flags, so it gets only the first two.
set(KESTREL_AVX512_FLAGS -march=x86-64-v4 -mprefer-vector-width=256)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND KESTREL_AVX512_FLAGS -mmove-max=128 -mstore-max=128)
endif()

if(KESTREL_NATIVE)
  # On an AVX-512 machine -march=native takes the same care as the avx512 level's flags.
  target_compile_options(kestrel_common_options INTERFACE -march=native -mprefer-vector-width=256)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(kestrel_common_options INTERFACE -mmove-max=128 -mstore-max=128)
  endif()
endif()
