# Kestrel's hot kernels (framework/ops/kernels/cpu/) are compiled once per x86-64 level and one
# level is chosen at start-up (framework/ops/kernels/cpu_kernels.cpp), so one build runs right and
# fast on every CPU while the rest of the library stays portable.
#
# A level's object files define the same inline functions and template instantiations as the
# rest of the library (std::vector's, Eigen's, Shape's), compiled with wider instructions. Linked
# as they are, the linker would keep one copy of each and might keep an AVX-512 one for baseline
# callers. So each level's objects are linked into one relocatable object whose weak definitions
# are renamed with the level as prefix: every level keeps its own copies, and only the kernels'
# own (level-namespaced) functions are shared.

# The levels built: every one by default. A build that runs only on the machine that builds it
# (KESTREL_HIGHEST_CPU_LEVEL=host, as CI's sanitizer builds) can leave out the levels above that
# machine's, which would never run; the library then caps its choice at the highest built
# (framework/core/cpu_capability.h).
set(KESTREL_HIGHEST_CPU_LEVEL avx512 CACHE STRING "The highest CPU level to compile Kestrel's kernels for:
  avx512 (every level, the default: the library runs fast on every x86-64 CPU), avx2, baseline, or host (the
  highest this machine runs, for a build that only runs here: the levels above it would never run)")
set_property(CACHE KESTREL_HIGHEST_CPU_LEVEL PROPERTY STRINGS avx512 avx2 baseline host)
set(kestrel_all_cpu_levels baseline avx2 avx512)
set(kestrel_highest_cpu_level "${KESTREL_HIGHEST_CPU_LEVEL}")
if(kestrel_highest_cpu_level STREQUAL "host")
  # The library's own detection, run at configure time.
  try_run(kestrel_host_level_ran kestrel_host_level_compiled
          SOURCES "${PROJECT_SOURCE_DIR}/cmake/print_host_cpu_level.cpp"
                  "${PROJECT_SOURCE_DIR}/framework/core/cpu_capability.cpp"
                  "${PROJECT_SOURCE_DIR}/framework/core/error.cpp"
          CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}"
          COMPILE_DEFINITIONS -DKESTREL_HIGHEST_BUILT_CPU_LEVEL=2
          CXX_STANDARD 20
          COMPILE_OUTPUT_VARIABLE kestrel_host_level_log
          RUN_OUTPUT_VARIABLE kestrel_highest_cpu_level)
  if(NOT kestrel_host_level_compiled OR NOT kestrel_host_level_ran EQUAL 0)
    message(FATAL_ERROR "KESTREL_HIGHEST_CPU_LEVEL=host: could not run cmake/print_host_cpu_level.cpp on this "
                        "machine (cross-compiling?); name a level instead.\n${kestrel_host_level_log}")
  endif()
  message(STATUS "Kestrel: this machine's highest CPU level is ${kestrel_highest_cpu_level}")
endif()
list(FIND kestrel_all_cpu_levels "${kestrel_highest_cpu_level}" kestrel_highest_cpu_level_index)
if(kestrel_highest_cpu_level_index LESS 0)
  message(FATAL_ERROR "KESTREL_HIGHEST_CPU_LEVEL=${KESTREL_HIGHEST_CPU_LEVEL} names no CPU level: use avx512, avx2, "
                      "baseline or host")
endif()
# The levels built, lowest first: baseline always, as every x86-64 CPU's fallback.
list(SUBLIST kestrel_all_cpu_levels 0 ${kestrel_highest_cpu_level_index} KESTREL_CPU_LEVELS)
list(APPEND KESTREL_CPU_LEVELS ${kestrel_highest_cpu_level})

# psABI level flags. The avx512 level takes KESTREL_AVX512_FLAGS (KestrelCompileOptions.cmake),
# which keep GCC 12 away from its wide-constant miscompile; Eigen still uses 512-bit registers
# through its intrinsics. Under GCC the avx512 objects are compiled with the dumps that
# cmake/check_no_wide_slp.sh reads, and the ctest framework_ops_test.avx512_kernels_check
# (tests/framework/ops) fails on either of its findings: it checks the very objects the library
# links, and compiles nothing again. (ccache does not cache a compile that writes dumps; these few
# objects build every time a fresh build directory does.)
set(KESTREL_CPU_FLAGS_baseline "")
set(KESTREL_CPU_FLAGS_avx2 -march=x86-64-v3 -mtune=generic)
set(KESTREL_CPU_FLAGS_avx512 ${KESTREL_AVX512_FLAGS} -mtune=generic)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12's own avx512fintrin.h trips -Wmaybe-uninitialized in Eigen's AVX-512 packets
  # (_mm512_undefined_ps, left undefined on purpose), hence the one silenced warning; clang has
  # no such warning.
  list(APPEND KESTREL_CPU_FLAGS_avx512 -Wno-maybe-uninitialized)
endif()

set(KESTREL_AVX512_DUMP_FLAGS "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(KESTREL_AVX512_DUMP_FLAGS -fdump-tree-vect-optimized -fdump-tree-slp-optimized -fdump-rtl-expand)
endif()

# The object libraries compiled with KESTREL_AVX512_DUMP_FLAGS, for the check (tests/framework/ops).
set_property(GLOBAL PROPERTY KESTREL_AVX512_DUMPED_OBJECT_LIBRARIES "")

# kestrel_add_cpu_kernels(TARGET SOURCES... LIBS...): compiles SOURCES once per level, with the
# usage requirements of LIBS, into TARGET. TARGET's own files learn the highest level built from
# KESTREL_HIGHEST_BUILT_CPU_LEVEL, CpuCapability's value (framework/core/cpu_capability.h).
function(kestrel_add_cpu_kernels target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  set(sources ${ARG_SOURCES})
  target_compile_definitions(${target} PRIVATE KESTREL_HIGHEST_BUILT_CPU_LEVEL=${kestrel_highest_cpu_level_index})
  foreach(level IN LISTS KESTREL_CPU_LEVELS)
    set(objects ${target}_cpu_${level})
    add_library(${objects} OBJECT ${sources})
    target_compile_definitions(${objects} PRIVATE KESTREL_CPU_LEVEL=${level})
    target_compile_options(${objects} PRIVATE ${KESTREL_CPU_FLAGS_${level}})
    if(level STREQUAL "avx512" AND KESTREL_AVX512_DUMP_FLAGS)
      target_compile_options(${objects} PRIVATE ${KESTREL_AVX512_DUMP_FLAGS})
      set_property(GLOBAL APPEND PROPERTY KESTREL_AVX512_DUMPED_OBJECT_LIBRARIES ${objects})
    endif()
    target_include_directories(${objects} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${objects} PRIVATE ${ARG_LIBS})
    target_compile_features(${objects} PRIVATE cxx_std_20)
    # One translation unit per kernel file, in a unity build too: the check reads each avx512
    # object's dumps by its source's name, and a few heavy files gain little from batching.
    set_target_properties(${objects} PROPERTIES POSITION_INDEPENDENT_CODE ON UNITY_BUILD OFF)

    set(merged "${CMAKE_CURRENT_BINARY_DIR}/${target}_cpu_${level}${CMAKE_CXX_OUTPUT_EXTENSION}")
    add_custom_command(
      OUTPUT "${merged}"
      COMMAND "${CMAKE_COMMAND}" -DLEVEL=${level} -DOUTPUT=${merged} "-DOBJECTS=$<JOIN:$<TARGET_OBJECTS:${objects}>,|>"
              -DLINKER=${CMAKE_LINKER} -DNM=${CMAKE_NM} -DOBJCOPY=${CMAKE_OBJCOPY}
              -P "${PROJECT_SOURCE_DIR}/cmake/kestrel_merge_cpu_level.cmake"
      DEPENDS ${objects} $<TARGET_OBJECTS:${objects}> "${PROJECT_SOURCE_DIR}/cmake/kestrel_merge_cpu_level.cmake"
      COMMENT "Merging ${target}'s ${level} kernels"
      VERBATIM)
    set_source_files_properties("${merged}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE "${merged}")
  endforeach()
endfunction()
