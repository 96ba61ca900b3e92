#!/usr/bin/env bash
# Installs the Debian packages xshard needs to build and test, only those that are missing.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config          # toolchain
  libgtest-dev libgmock-dev libbenchmark-dev # tests and benchmarks
  libcli11-dev                              # command line
  libopenblas-dev                           # GEMM, and LAPACK for JAX's jnp.linalg custom-calls
  libhwy-dev                                # SIMD elementwise kernels (runtime dispatch)
  libdnnl-dev                               # bf16 GEMM (oneDNN matmul)
  clang libclang-rt-14-dev libomp-dev       # libFuzzer targets (clang; OpenMP for oneDNN)
  python3-dev python3-venv                  # the Python package (scripts/python-env.sh makes .venv/)
  libopenmpi-dev openmpi-bin                # several processes / hosts (src/xshard/mpi/, mpirun)
  coinor-libcbc-dev                         # the ILP solver of `xshard autoshard` (src/xshard/autoshard/)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "xshard: installing missing Debian packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then
    sudo_cmd=(sudo)
  else
    echo "xshard: error: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
