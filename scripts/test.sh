#!/usr/bin/env bash
# The newcomer's second command (and what CI runs): builds everything, builds the libFuzzer
# targets with clang, then runs the whole test suite with ctest (unit, golden, corpus, CLI
# end-to-end, examples, the Python package's pytest suite and short fuzz runs). ctest's summary is
# the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# JAX too: the Python package's JAX cases and xla_compare_quick compare xshard with it.
XSHARD_PYTHON_JAX=1 scripts/python-env.sh
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DXSHARD_BUILD_PYTHON=ON \
  -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build -j "$jobs"

# Fuzz targets: a separate clang build, instrumented for libFuzzer; ctest runs each briefly. It
# builds the cuda layer's stand-in (XSHARD_WITH_CUDA=OFF): the fuzzers use no GPU, the main build
# above compiles the real backend, and this one checks that a build without the toolkit compiles.
# Line tables only (file:line in a finding's stack trace, no variables): 6-18 % less compile time
# per file than -g on the largest sources.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++ -DXSHARD_BUILD_FUZZ=ON -DXSHARD_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target xs_fuzzers

cd build
ctest --output-on-failure -j "$jobs" "$@"
