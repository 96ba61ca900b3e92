# Helpers shared by every layer's CMakeLists: one static library per folder, one gtest binary per
# folder built from its *_test.cc files, and libFuzzer targets from *_fuzz.cc files.

# The test binaries' shared precompiled header (cmake/test_pch.h; XSHARD_PCH), built once by the object
# library xs_test_pch with the test files' flags (the -O1 and the definitions below); every
# xs_NAME_test reuses it. GCC checks each use (-Winvalid-pch, an error under -Werror).
function(xs_test_pch)
  if(TARGET xs_test_pch)
    return()
  endif()
  add_library(xs_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/test_pch.cc)
  target_include_directories(xs_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(xs_test_pch PRIVATE GTest::gmock GTest::gtest)
  xs_test_flags(xs_test_pch)
  target_precompile_headers(xs_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/cmake/test_pch.h)
endfunction()

# The compile flags of test code (test binaries and their precompiled header).
function(xs_test_flags target)
  # The test files themselves compile at -O1 in optimized builds (the libraries they test keep
  # the build type's flags): 25-40 % less compile time per test file than -O3 with GCC 12
  # (autodiff_test.cc 13.8 -> 8.2 s, array_test.cc 10.9 -> 8.0 s), and no test's time is spent
  # in its own code.
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo,MinSizeRel>:-O1>)
  # OpenMP's flags on every test file, as the kernels layer passes them to the tests above it:
  # one precompiled header fits all (GCC refuses it where _OPENMP differs).
  target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
  # GCC 12's -Warray-bounds and -Wstringop-overflow misfire on std::string concatenations of a
  # short literal (`std::string(XSHARD_SOURCE_DIR) + "/tests/..."`, GCC PRs 105651, 105329);
  # which files they fire in changes with inlining, the precompiled header and the length of the
  # checkout's path. Off for test code only; the libraries keep them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow)
  endif()
  target_compile_definitions(${target} PRIVATE
    XSHARD_CORPUS_DIR="${XSHARD_CORPUS_DIR}" XSHARD_SEEDS_DIR="${XSHARD_SEEDS_DIR}"
    XSHARD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
endfunction()

# xs_layer(NAME DEPS dep... [TEST_DEPS dep...] [EXCLUDE file.cc...]): library xs_NAME from this folder's *.cc (tests and fuzzers excluded),
# plus test binary xs_NAME_test from *_test.cc when tests are on.
function(xs_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS;TEST_DEPS;EXCLUDE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  file(GLOB fuzzers CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_fuzz.cc)
  foreach(e ${ARG_EXCLUDE})
    list(REMOVE_ITEM srcs ${CMAKE_CURRENT_SOURCE_DIR}/${e})
  endforeach()
  if(tests)
    list(REMOVE_ITEM srcs ${tests})
  endif()
  if(fuzzers)
    list(REMOVE_ITEM srcs ${fuzzers})
  endif()
  if(srcs)
    add_library(xs_${name} STATIC ${srcs})
    target_include_directories(xs_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(xs_${name} PUBLIC ${ARG_DEPS})
    if(XSHARD_PCH)
      # Its own precompiled header (its flags and definitions differ from the other layers').
      target_precompile_headers(xs_${name} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/lib_pch.h)
    endif()
  else()
    add_library(xs_${name} INTERFACE)
    target_include_directories(xs_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(xs_${name} INTERFACE ${ARG_DEPS})
  endif()
  if(XSHARD_BUILD_TESTS AND tests)
    add_executable(xs_${name}_test ${tests})
    target_link_libraries(xs_${name}_test PRIVATE xs_${name} ${ARG_TEST_DEPS} GTest::gmock GTest::gtest_main)
    xs_test_flags(xs_${name}_test)
    if(XSHARD_PCH)
      xs_test_pch()
      target_precompile_headers(xs_${name}_test REUSE_FROM xs_test_pch)
    endif()
    gtest_discover_tests(xs_${name}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ${name})
  endif()
  if(XSHARD_BUILD_FUZZ)
    foreach(f ${fuzzers})
      get_filename_component(fname ${f} NAME_WE)
      add_executable(${fname} ${f})
      target_link_options(${fname} PRIVATE -fsanitize=fuzzer)
      # All fuzzers land in <build>/fuzz/ where tests/CMakeLists.txt looks for them.
      set_target_properties(${fname} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
      target_link_libraries(${fname} PRIVATE xs_${name})
      add_dependencies(xs_fuzzers ${fname})
    endforeach()
  endif()
endfunction()
