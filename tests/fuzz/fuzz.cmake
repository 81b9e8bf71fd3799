# Fuzz targets: one file per parser in tests/fuzz/targets/<name>.cpp (see
# tests/fuzz/fuzz_target.hpp), seeds in tests/fuzz/corpus/<name>/, crash
# reproducers in tests/fuzz/regressions/<name>/.
#
# Every build: iodiag_fuzz_replay runs every target over its seeds and
# regression inputs (a GoogleTest per target), so a fixed crash stays fixed.
# With -DIODIAG_FUZZ=ON (clang): fuzz_<name>, the libFuzzer binaries, and a
# ctest `fuzz.<name>` each that fuzzes for IODIAG_FUZZ_SECONDS (label `fuzz`).
# Long runs: tests/fuzz/run_fuzzers.sh (docs/hardening.md "Fuzzing").

set(IODIAG_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)
file(GLOB IODIAG_FUZZ_TARGETS CONFIGURE_DEPENDS ${IODIAG_FUZZ_DIR}/targets/*.cpp)

if(NOT IODIAG_UNIT_TESTS AND NOT IODIAG_FUZZ)
  return()
endif()
add_library(iodiag_fuzz_support STATIC ${IODIAG_FUZZ_DIR}/fuzz_support.cpp)
target_link_libraries(iodiag_fuzz_support PUBLIC iodiag_app)
iodiag_precompile(iodiag_fuzz_support)

if(IODIAG_UNIT_TESTS)
  add_executable(iodiag_fuzz_replay ${IODIAG_FUZZ_TARGETS} ${IODIAG_FUZZ_DIR}/fuzz_replay_test.cpp)
  target_link_libraries(iodiag_fuzz_replay PRIVATE iodiag_fuzz_support GTest::gtest GTest::gtest_main)
  target_compile_definitions(iodiag_fuzz_replay PRIVATE IODIAG_FUZZ_DIR="${IODIAG_FUZZ_DIR}")
  iodiag_precompile(iodiag_fuzz_replay <gtest/gtest.h>)
  gtest_discover_tests(iodiag_fuzz_replay DISCOVERY_TIMEOUT 60 PROPERTIES LABELS sanitized)
endif()

if(IODIAG_FUZZ)
  set(IODIAG_FUZZ_SECONDS 10 CACHE STRING "How long ctest's fuzz.<name> tests fuzz each target, in seconds")
  foreach(src ${IODIAG_FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(fuzz_${name} ${src})
    target_compile_definitions(fuzz_${name} PRIVATE IODIAG_LIBFUZZER=1)
    target_link_libraries(fuzz_${name} PRIVATE iodiag_fuzz_support)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    if(IODIAG_PCH)   # one small file each: the support library's PCH, not one of their own
      target_precompile_headers(fuzz_${name} REUSE_FROM iodiag_fuzz_support)
    endif()
    add_test(NAME fuzz.${name}
             COMMAND ${IODIAG_FUZZ_DIR}/run_fuzzers.sh --build ${CMAKE_BINARY_DIR}
                     --seconds ${IODIAG_FUZZ_SECONDS} ${name})
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 300)
  endforeach()
endif()
