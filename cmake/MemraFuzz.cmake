# libFuzzer targets, built by clang beside a gcc build and run by ctest.
#
#   memra_add_fuzzer(<name> SOURCES <file>... CORPUS <dir>
#                    [REGRESS <dir>] [LIBS <target>...] [SECONDS <s>])
#
# <name>     the fuzzer's name: the binary fuzz_<name>, the tests fuzz.<name>
#            (libFuzzer for SECONDS, default MEMRA_FUZZ_SECONDS = 10, from the seed corpus CORPUS)
#            and fuzz.<name>.regress (every file under REGRESS, default
#            tests/fuzz/regress/<name>, and every seed, run once each)
# SOURCES    the harness (defines LLVMFuzzerTestOneInput); paths relative to
#            the calling CMakeLists.txt
# CORPUS     the committed seed corpus folder (relative paths: to the caller)
# LIBS       what the harness links (default: memra, the shared library);
#            targets defined in the fuzz build (tests/fuzz/CMakeLists.txt)
#
# How it builds: the fuzzers need clang's -fsanitize=fuzzer, while the
# default preset builds with gcc. When MEMRA_FUZZ is ON or AUTO and a clang
# that links -fsanitize=fuzzer,address,undefined is found at configure, the
# build (`cmake --build`) also configures and builds this same source tree
# with that clang under <build>/fuzz (MEMRA_FUZZ_BUILD=ON: the library, with
# coverage and ASan+UBSan, and the fuzzers only), and ctest runs the binaries
# from there. Without such a clang the tests are still registered and report
# skipped (exit 77), never passed; MEMRA_FUZZ=ON then fails the configure.
include_guard(GLOBAL)

set(MEMRA_FUZZ_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g)
set(MEMRA_FUZZ_RUNNER ${CMAKE_CURRENT_LIST_DIR}/../tests/fuzz/run_fuzzer.sh)

if(MEMRA_FUZZ_BUILD)
  # Inside the clang build: every C file gets coverage for libFuzzer and the sanitizers.
  add_compile_options($<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link> ${MEMRA_FUZZ_FLAGS})
  add_link_options(-fsanitize=address,undefined)
  set(MEMRA_FUZZ_READY ON)
elseif(MEMRA_FUZZ STREQUAL "OFF")
  set(MEMRA_FUZZ_READY OFF)
  set(MEMRA_FUZZ_WHY "MEMRA_FUZZ=OFF in this build")
else()
  find_program(MEMRA_FUZZ_CC NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14
               DOC "clang for the libFuzzer build")
  set(MEMRA_FUZZ_READY OFF)
  if(NOT MEMRA_FUZZ_CC)
    set(MEMRA_FUZZ_WHY "no clang found (Debian: apt-get install clang libclang-rt-dev)")
  else()
    set(_probe_dir ${PROJECT_BINARY_DIR}/CMakeFiles/fuzz_probe)
    file(MAKE_DIRECTORY ${_probe_dir})
    file(WRITE ${_probe_dir}/probe.c
         "#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\n"
         "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
    execute_process(COMMAND ${MEMRA_FUZZ_CC} -fsanitize=fuzzer,address,undefined probe.c -o probe
                    WORKING_DIRECTORY ${_probe_dir} RESULT_VARIABLE _probe_rc OUTPUT_VARIABLE _probe_out
                    ERROR_VARIABLE _probe_out)
    if(_probe_rc EQUAL 0)
      set(MEMRA_FUZZ_READY ON)
    else()
      string(STRIP "${_probe_out}" _probe_out)
      set(MEMRA_FUZZ_WHY "${MEMRA_FUZZ_CC} cannot link -fsanitize=fuzzer (Debian: apt-get install clang libclang-rt-dev): ${_probe_out}")
    endif()
  endif()
  if(NOT MEMRA_FUZZ_READY AND MEMRA_FUZZ STREQUAL "ON")
    message(FATAL_ERROR "MEMRA_FUZZ=ON: ${MEMRA_FUZZ_WHY}")
  endif()
  if(MEMRA_FUZZ_READY)
    message(STATUS "fuzzers: built with ${MEMRA_FUZZ_CC} under ${PROJECT_BINARY_DIR}/fuzz")
    include(ExternalProject)
    ExternalProject_Add(memra_fuzzers
      SOURCE_DIR ${PROJECT_SOURCE_DIR}
      BINARY_DIR ${PROJECT_BINARY_DIR}/fuzz
      CMAKE_ARGS -DCMAKE_C_COMPILER=${MEMRA_FUZZ_CC} -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMRA_FUZZ_BUILD=ON
                 -DMEMRA_GPU_MODULES=OFF -DMEMRA_WERROR=OFF
      BUILD_ALWAYS ON
      INSTALL_COMMAND ""
      USES_TERMINAL_BUILD ON)
  else()
    message(STATUS "fuzzers: not built, their tests report skipped: ${MEMRA_FUZZ_WHY}")
  endif()
endif()

# How long each fuzzer runs in the default test run: a smoke run of 10 s each
# (the committed regressions and seeds always run in full, in .regress); CI
# fuzzes 30 s each (.ci/run sets MEMRA_FUZZ_SECONDS, which the runner reads at
# test time over this value).
set(MEMRA_FUZZ_SECONDS 10 CACHE STRING "Seconds each libFuzzer target fuzzes in ctest (the environment's MEMRA_FUZZ_SECONDS wins)")

function(memra_add_fuzzer name)
  cmake_parse_arguments(F "" "CORPUS;REGRESS;SECONDS" "SOURCES;LIBS" ${ARGN})
  if(NOT F_SOURCES OR NOT F_CORPUS)
    message(FATAL_ERROR "memra_add_fuzzer(${name}): SOURCES and CORPUS are required")
  endif()
  if(NOT F_LIBS)
    set(F_LIBS memra)
  endif()
  if(NOT F_SECONDS)
    set(F_SECONDS ${MEMRA_FUZZ_SECONDS})
  endif()
  get_filename_component(corpus ${F_CORPUS} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  if(F_REGRESS)
    get_filename_component(regress ${F_REGRESS} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  else()
    set(regress ${PROJECT_SOURCE_DIR}/tests/fuzz/regress/${name})
  endif()

  if(MEMRA_FUZZ_BUILD)
    add_executable(fuzz_${name} ${F_SOURCES})
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_include_directories(fuzz_${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
    target_compile_definitions(fuzz_${name} PRIVATE _GNU_SOURCE)
    target_link_libraries(fuzz_${name} PRIVATE ${F_LIBS})
    return()
  endif()

  set(bin ${PROJECT_BINARY_DIR}/fuzz/${CMAKE_INSTALL_BINDIR}/fuzz_${name})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/${name})
  if(MEMRA_FUZZ_READY)
    add_test(NAME fuzz.${name} COMMAND sh ${MEMRA_FUZZ_RUNNER} run ${bin} ${work} ${F_SECONDS} ${corpus})
    add_test(NAME fuzz.${name}.regress COMMAND sh ${MEMRA_FUZZ_RUNNER} regress ${bin} ${work} ${regress} ${corpus})
  else()
    add_test(NAME fuzz.${name} COMMAND sh ${MEMRA_FUZZ_RUNNER} skip "${MEMRA_FUZZ_WHY}")
    add_test(NAME fuzz.${name}.regress COMMAND sh ${MEMRA_FUZZ_RUNNER} skip "${MEMRA_FUZZ_WHY}")
  endif()
  math(EXPR limit "${F_SECONDS} + 300")
  set_tests_properties(fuzz.${name} fuzz.${name}.regress PROPERTIES LABELS "fuzz" SKIP_RETURN_CODE 77 TIMEOUT ${limit})
  # the regression inputs first: a known crash fails fast, with its name
  set_tests_properties(fuzz.${name} PROPERTIES DEPENDS fuzz.${name}.regress)
endfunction()
