# Finds Python and nanobind for the xshard Python module (python/). Sets XSHARD_PYTHON_FOUND
# (python/CMakeLists.txt then builds the layer libraries as position-independent code).
find_package(Python 3.9 COMPONENTS Interpreter Development.Module QUIET)
set(XSHARD_PYTHON_FOUND OFF)
if(Python_FOUND)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE nanobind_ROOT
                  RESULT_VARIABLE nanobind_result ERROR_QUIET)
  if(nanobind_result EQUAL 0)
    find_package(nanobind CONFIG QUIET)
    if(nanobind_FOUND)
      set(XSHARD_PYTHON_FOUND ON)
    endif()
  endif()
endif()
if(XSHARD_PYTHON_FOUND)
  message(STATUS "xshard Python module: on (${Python_EXECUTABLE}, nanobind ${nanobind_VERSION})")
elseif(XSHARD_BUILD_PYTHON STREQUAL "ON")
  message(FATAL_ERROR "XSHARD_BUILD_PYTHON=ON but nanobind is not importable by "
          "'${Python_EXECUTABLE}': run scripts/setup.sh (it creates .venv/ with nanobind) or "
          "pass -DPython_EXECUTABLE=.venv/bin/python")
else()
  message(STATUS "xshard Python module: off (no Python with nanobind; scripts/setup.sh makes .venv/)")
endif()
