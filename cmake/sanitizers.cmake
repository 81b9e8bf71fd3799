# Sanitizer and fuzzing builds, in a build directory of their own (the normal
# gcc build is unaffected):
#
#   cmake -S . -B build-sanitize -DIODIAG_SANITIZE=ON            # gcc or clang
#   CC=clang CXX=clang++ cmake -S . -B build-sanitize -DIODIAG_FUZZ=ON   # + libFuzzer targets
#
# IODIAG_SANITIZE compiles and links everything with AddressSanitizer and
# UndefinedBehaviorSanitizer, every check fatal (-fno-sanitize-recover=all):
# the first report ends the process with a non-zero status. .ci/sanitize also
# points every report at a log file and fails on any, so a report in a child
# process whose exit status a test ignores still fails the suite.
#
# IODIAG_FUZZ (clang only) implies IODIAG_SANITIZE and adds libFuzzer's
# coverage instrumentation (-fsanitize=fuzzer-no-link) to everything, so the
# fuzz_<name> binaries of tests/fuzz/fuzz.cmake see into the libraries.
option(IODIAG_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer (any report is fatal)" OFF)
option(IODIAG_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies IODIAG_SANITIZE)" OFF)

if(IODIAG_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "IODIAG_FUZZ needs clang (libFuzzer): CC=clang CXX=clang++ cmake ... -DIODIAG_FUZZ=ON")
  endif()
  set(IODIAG_SANITIZE ON)
endif()

if(IODIAG_SANITIZE)
  set(IODIAG_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${IODIAG_SANITIZER_FLAGS})
  add_link_options(${IODIAG_SANITIZER_FLAGS})
  if(IODIAG_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
  message(STATUS "iodiag: sanitizer build (ASan + UBSan)")
endif()
