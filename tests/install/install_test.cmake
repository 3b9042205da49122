# ctest's install_downstream test (see CMakeLists.txt here), run as cmake -P with the paths
# passed in -D. Each step echoes its command, so a failure shows what to rerun by hand.
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  execute_process(COMMAND ${ARGN} COMMAND_ECHO STDOUT RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install_downstream: ${what} failed (${result})")
  endif()
endfunction()

# A fresh prefix and downstream build each run, so nothing stale can make the test pass.
file(REMOVE_RECURSE "${INSTALL_PREFIX}" "${DOWNSTREAM_BINARY_DIR}")

execute_process(COMMAND "${CMAKE_COMMAND}" --install "${KESTREL_BUILD_DIR}" --prefix "${INSTALL_PREFIX}" --config "${CONFIG}"
                RESULT_VARIABLE result OUTPUT_QUIET)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "install_downstream: cmake --install ${KESTREL_BUILD_DIR} --prefix ${INSTALL_PREFIX} failed (${result})")
endif()

set(configure_args
  -S "${DOWNSTREAM_SOURCE_DIR}" -B "${DOWNSTREAM_BINARY_DIR}" -G "${GENERATOR}"
  "-DCMAKE_PREFIX_PATH=${INSTALL_PREFIX}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DCMAKE_BUILD_TYPE=${CONFIG}"
  # Only the fresh prefix may satisfy find_package(Kestrel), never a registry entry.
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  "-DKESTREL_EXPECTED_PREFIX=${INSTALL_PREFIX}")
if(CXX_COMPILER_LAUNCHER)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_COMPILER_LAUNCHER}")
endif()
run_step("configuring the downstream project" "${CMAKE_COMMAND}" ${configure_args})
run_step("building the downstream project" "${CMAKE_COMMAND}" --build "${DOWNSTREAM_BINARY_DIR}" --config "${CONFIG}")

set(program "${DOWNSTREAM_BINARY_DIR}/kestrel_downstream")
if(NOT EXISTS "${program}")
  set(program "${DOWNSTREAM_BINARY_DIR}/${CONFIG}/kestrel_downstream")  # multi-config generators
endif()
run_step("running the downstream program" "${program}")
