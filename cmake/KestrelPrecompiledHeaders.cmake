# Precompiled headers (KESTREL_PRECOMPILE_HEADERS), for the tests and the programs: each set is
# compiled once, by a target of its own, and every target that uses it reuses that one file. A
# precompiled header per executable would cost more to build than it saves (GCC's are ~100 MB).
# A set's owner carries only the usage requirements every user shares: a user may add include
# paths and definitions of its own, which GCC and clang accept, but not lack one of the owner's.
#
#   kestrel_add_precompiled_headers(NAME HEADER LIBS...)   the set NAME, HEADER built with LIBS' flags
#   kestrel_use_precompiled_headers(TARGET NAME)           TARGET's sources start from set NAME

function(kestrel_add_precompiled_headers name header)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  if(NOT KESTREL_PRECOMPILE_HEADERS)
    return()
  endif()
  add_library(kestrel_pch_${name} OBJECT "${PROJECT_SOURCE_DIR}/cmake/precompiled_headers.cpp")
  target_link_libraries(kestrel_pch_${name} PRIVATE ${ARG_LIBS})
  target_include_directories(kestrel_pch_${name} PRIVATE "${PROJECT_SOURCE_DIR}")
  target_precompile_headers(kestrel_pch_${name} PRIVATE "${header}")
endfunction()

function(kestrel_use_precompiled_headers target name)
  if(KESTREL_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} REUSE_FROM kestrel_pch_${name})
  endif()
endfunction()
