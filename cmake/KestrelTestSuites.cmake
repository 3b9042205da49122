# kestrel_add_test_suites(TARGET PREFIX <name> [ENVIRONMENT <var=value>...]): registers each
# GoogleTest suite of the test executable TARGET as one ctest test, "<name>.<Suite>", running
# `TARGET --gtest_filter=<Suite>.*`.
#
# Why suites, not cases (gtest_discover_tests): every test process pays about 20 ms before its
# first case runs, as the dynamic loader maps and binds some 45 libraries (HDF5 alone brings curl
# and its TLS stack). With one process per case that was 5,600 starts, 40% of the suite's CPU
# time; with one per suite it is a few hundred, and ctest -j still spreads the suites over the
# cores. The suites are listed when ctest runs (TEST_INCLUDE_FILES, as gtest_discover_tests's
# PRE_TEST mode does), so a build never runs its own test executables, and listed again only when
# the executable, or this registration, is newer than the list.
set(KESTREL_LIST_TEST_SUITES_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/kestrel_list_test_suites.cmake")

function(kestrel_add_test_suites target)
  cmake_parse_arguments(ARG "" "PREFIX" "ENVIRONMENT" ${ARGN})
  set(base "${CMAKE_CURRENT_BINARY_DIR}/${ARG_PREFIX}")
  string(REPLACE "@" "_at_" base "${base}")  # a file name without ctest's special character
  set(tests_file "${base}_suites.cmake")
  # The ctest-time script's arguments, one per line, in brackets so no value needs escaping.
  string(CONCAT include_content
    "if(EXISTS [==[$<TARGET_FILE:${target}>]==])\n"
    "  if(NOT EXISTS [==[${tests_file}]==] OR NOT [==[${tests_file}]==] IS_NEWER_THAN [==[$<TARGET_FILE:${target}>]==]\n"
    "     OR NOT [==[${tests_file}]==] IS_NEWER_THAN \"\${CMAKE_CURRENT_LIST_FILE}\")\n"
    "    include([==[${KESTREL_LIST_TEST_SUITES_SCRIPT}]==])\n"
    "    kestrel_list_test_suites(\n"
    "      EXECUTABLE [==[$<TARGET_FILE:${target}>]==]\n"
    "      PREFIX [==[${ARG_PREFIX}]==]\n"
    "      WORKING_DIRECTORY [==[${CMAKE_CURRENT_BINARY_DIR}]==]\n"
    "      ENVIRONMENT [==[${ARG_ENVIRONMENT}]==]\n"
    "      OUTPUT [==[${tests_file}]==])\n"
    "  endif()\n"
    "  include([==[${tests_file}]==])\n"
    "else()\n"
    "  add_test([==[${ARG_PREFIX}_NOT_BUILT]==] [==[${ARG_PREFIX}_NOT_BUILT]==])\n"
    "endif()\n")
  file(GENERATE OUTPUT "${base}_include.cmake" CONTENT "${include_content}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${base}_include.cmake")
endfunction()
