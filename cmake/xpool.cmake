# Helpers that keep every component's CMakeLists.txt a few lines long.
#
#   xpool_library(NAME name SRCS a.cc b.cc DEPS other_lib ...)
#       -> static library target `xpool_<name>`, includes written from src/.
#   xpool_test(NAME name SRCS a_test.cc DEPS xpool_<name> ...)
#       -> gtest executable registered with ctest (label = folder name).
#   xpool_bench(NAME name SRCS a_bench.cc DEPS ...)
#       -> Google Benchmark executable (only when the package is found; left out of the default target unless
#          XPOOL_BUILD_BENCH, see xpool_exclude_unless_bench).

function(xpool_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_library(xpool_${ARG_NAME} STATIC ${ARG_SRCS})
  target_include_directories(xpool_${ARG_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(xpool_${ARG_NAME} PUBLIC ${ARG_DEPS})
  # -Wshadow on the libraries' own code (tests are left out: gtest's macros declare locals of their own).
  target_compile_options(xpool_${ARG_NAME} PRIVATE -Wshadow)
endfunction()

# One precompiled header for every xpool_test target (XPOOL_TEST_PCH, ON by default in the Asan build): gtest and the standard
# headers the tests include most, compiled once (target xpool_test_pch, the same flags as a test target) and
# reused by each test target instead of being parsed again in each of ~80 test files (docs/PERFORMANCE.md,
# "Build time (CI)"). A test file still includes what it uses: -DXPOOL_TEST_PCH=OFF must build too. Where a
# target's flags ever stop matching, GCC says "-Winvalid-pch" (not an error here) and parses the headers itself.
# ON by default in the Asan build (`make test`, CI) only: with the PCH, GCC 12 at -O3 (Release) reports false
# -Wstringop-overflow warnings from <string> inlined into some test files, which -Werror turns into errors.
if(CMAKE_BUILD_TYPE STREQUAL "Asan")
  set(xpool_test_pch_default ON)
else()
  set(xpool_test_pch_default OFF)
endif()
option(XPOOL_TEST_PCH "Share one precompiled gtest header between the test targets" ${xpool_test_pch_default})
set(XPOOL_TEST_PCH_HEADERS <gtest/gtest.h> <string> <vector> <map> <set> <filesystem> <fstream> <sstream>
    <thread> <chrono> <functional> <memory> <optional> <algorithm>
    CACHE STRING "Headers of the shared test PCH")
mark_as_advanced(XPOOL_TEST_PCH_HEADERS)

# ccache caches PCH users only with this sloppiness (its manual, "Precompiled headers"); the PCH's content is
# still part of the key.
function(xpool_test_ccache_launcher target)
  if(CCACHE_PROGRAM AND CMAKE_CXX_COMPILER_LAUNCHER STREQUAL CCACHE_PROGRAM)
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_SLOPPINESS=pch_defines,time_macros;${CCACHE_PROGRAM}")
  endif()
endfunction()

function(xpool_test_use_pch target)
  if(NOT XPOOL_TEST_PCH)
    return()
  endif()
  if(NOT TARGET xpool_test_pch)
    set(pch_src ${CMAKE_BINARY_DIR}/xpool_test_pch/xpool_test_pch.cc)
    file(CONFIGURE OUTPUT ${pch_src} CONTENT "// The owner of the test targets' shared PCH (cmake/xpool.cmake).\n")
    add_library(xpool_test_pch OBJECT ${pch_src})
    # A test target is an executable (-fPIE with CMAKE_POSITION_INDEPENDENT_CODE), this an object library
    # (-fPIC): GCC refuses a PCH made with the other one.
    set_target_properties(xpool_test_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(xpool_test_pch PRIVATE ${CMAKE_CXX_COMPILE_OPTIONS_PIE})
    target_include_directories(xpool_test_pch PRIVATE ${CMAKE_SOURCE_DIR}/src)
    target_link_libraries(xpool_test_pch PRIVATE GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
    if(CMAKE_BUILD_TYPE STREQUAL "Asan" AND XPOOL_TEST_OPT)
      target_compile_options(xpool_test_pch PRIVATE ${XPOOL_TEST_OPT})
    endif()
    target_precompile_headers(xpool_test_pch PRIVATE ${XPOOL_TEST_PCH_HEADERS})
    xpool_test_ccache_launcher(xpool_test_pch)
  endif()
  target_precompile_headers(${target} REUSE_FROM xpool_test_pch)
  target_compile_options(${target} PRIVATE -Wno-error=invalid-pch)
  xpool_test_ccache_launcher(${target})
endfunction()

# ctest starts the tests of highest COST first. A clean clone has no cost data of its own (ctest writes it after a
# run, in Testing/Temporary/CTestCostData.txt), so the long tests, declared last, would start last and end alone:
# their seconds (Asan, all 27 entries at -j2 on the loaded 2-core machine) set the order of CI's first run.
set(XPOOL_TEST_COSTS scheduler_test=61 studio_browser_test=55 e2e_agent_test=49 e2e_timeshare_test=39 job_spec_fuzz=34
    server_http_test=25 server_crash_test=24 store_test=21 vgpu_preload_test=18 agent_test=11 e2e_up_test=10
    server_test=9 studio_typecheck_test=9)
function(xpool_test_cost test)
  foreach(entry ${XPOOL_TEST_COSTS})
    if(entry MATCHES "^${test}=([0-9]+)$")
      set_tests_properties(${test} PROPERTIES COST ${CMAKE_MATCH_1})
    endif()
  endforeach()
endfunction()

function(xpool_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  target_include_directories(${ARG_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main Threads::Threads)
  # XPOOL_TEST_OPT (default -O0) compiles test code at -O0 in the Asan build (the code under test, in the
  # libraries, stays at -O1): the same checks under the same sanitizers for about half the compile CPU of a test
  # file (docs/PERFORMANCE.md, "Build time"). -DXPOOL_TEST_OPT= turns it off.
  if(CMAKE_BUILD_TYPE STREQUAL "Asan" AND XPOOL_TEST_OPT)
    target_compile_options(${ARG_NAME} PRIVATE ${XPOOL_TEST_OPT})
  endif()
  xpool_test_use_pch(${ARG_NAME})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "XPOOL_SOURCE_DIR=${CMAKE_SOURCE_DIR};XPOOL_BINARY_DIR=${CMAKE_BINARY_DIR}")
  if(ARG_LABELS)
    set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
  xpool_test_cost(${ARG_NAME})
endfunction()

function(xpool_bench)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  if(NOT benchmark_FOUND)
    message(STATUS "Google Benchmark not found: skipping ${ARG_NAME}")
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark Threads::Threads)
  xpool_exclude_unless_bench(${ARG_NAME})
endfunction()

# Benchmarks and load drivers that no test runs: out of `all` (still buildable by name) unless XPOOL_BUILD_BENCH.
function(xpool_exclude_unless_bench target)
  if(NOT XPOOL_BUILD_BENCH)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()
