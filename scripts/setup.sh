#!/usr/bin/env bash
# The newcomer's first command: installs missing Debian packages, makes .venv/ with the Python
# build and test dependencies (scripts/python-env.sh), builds xshard and its Python module
# (Release, into build/; `.venv/bin/python -c 'import xshard'` works after it) and runs the main
# job, `xshard demo`, on 8 virtual CPU devices.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/python-env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DXSHARD_BUILD_PYTHON=ON \
  -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build --target xshard _xshard _xshard_stub
./build/xshard demo "$@"
