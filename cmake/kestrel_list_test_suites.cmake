# Run by ctest (cmake/KestrelTestSuites.cmake): lists a GoogleTest executable's suites and writes
# one add_test per suite to OUTPUT, which ctest then includes.
function(kestrel_list_test_suites)
  cmake_parse_arguments(ARG "" "EXECUTABLE;PREFIX;WORKING_DIRECTORY;OUTPUT" "ENVIRONMENT" ${ARGN})
  execute_process(COMMAND "${ARG_EXECUTABLE}" --gtest_list_tests
                  WORKING_DIRECTORY "${ARG_WORKING_DIRECTORY}"
                  TIMEOUT 60
                  OUTPUT_VARIABLE listing
                  ERROR_VARIABLE errors
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${ARG_EXECUTABLE} --gtest_list_tests failed (${result}):\n${listing}${errors}")
  endif()
  # A suite is an unindented line "Name." or "Name/0.  # TypeParam = ..."; its cases are indented.
  string(REPLACE "\n" ";" lines "${listing}")
  set(content "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( .*)?$")
      continue()
    endif()
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND content
      "add_test([==[${ARG_PREFIX}.${suite}]==] [==[${ARG_EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${ARG_PREFIX}.${suite}]==] PROPERTIES\n"
      "  WORKING_DIRECTORY [==[${ARG_WORKING_DIRECTORY}]==]\n"
      "  ENVIRONMENT [==[${ARG_ENVIRONMENT}]==]\n"
      # A suite whose every case skipped reports as skipped, not passed.
      "  SKIP_REGULAR_EXPRESSION [==[\\[  PASSED  \\] 0 tests\\.]==])\n")
  endforeach()
  if(content STREQUAL "")
    message(FATAL_ERROR "${ARG_EXECUTABLE} --gtest_list_tests listed no suite:\n${listing}")
  endif()
  file(WRITE "${ARG_OUTPUT}" "${content}")
endfunction()
