#!/usr/bin/env bash
# Makes .venv/ in the checkout (once) with the Python package's build and test dependencies
# (python/requirements-dev.txt: nanobind, scikit-build-core, numpy, pytest), and points it at the
# module that CMake builds into build/python (a .pth file), so that `.venv/bin/python -c 'import
# xshard'` works once build/ is built. With XSHARD_PYTHON_JAX=1 (scripts/test.sh) it also installs
# JAX (python/requirements-jax.txt), for the tests that compare with it. Safe to run again: it
# installs only what is missing.
# $PYTHON picks the interpreter (default python3; Debian's needs python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "xshard: creating .venv/ with $("$python" --version 2>&1)"
  "$python" -m venv .venv
fi
if ! .venv/bin/python -c 'import nanobind, scikit_build_core, numpy, pytest' 2>/dev/null; then
  echo "xshard: installing the Python build and test dependencies into .venv/"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-dev.txt
fi
if [ "${XSHARD_PYTHON_JAX:-0}" = 1 ] && ! .venv/bin/python -c 'import jax' 2>/dev/null; then
  echo "xshard: installing JAX into .venv/ (python/requirements-jax.txt) for the tests that compare with it"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-jax.txt
fi
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/build/python" > "$site/xshard-build.pth"
