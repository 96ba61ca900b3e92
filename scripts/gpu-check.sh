#!/usr/bin/env bash
# The GPU check, in two halves, for a GPU machine that cannot build xshard itself (no Highway, no
# oneDNN headers, no network):
#
#   scripts/gpu-check.sh pack      # here, on a build machine: builds xshard and the CUDA test
#                                  # binary, packs them with the shared libraries ldd names (less
#                                  # glibc and the CUDA toolkit's own) and the XLA corpus into
#                                  # gpu-pack/ (git-ignored; ~20 MB with xz)
#   scripts/gpu-check.sh run       # there, from the checkout root with gpu-pack/ carried along:
#                                  # the `cuda` tests, the XLA corpus and the jax_compare programs
#                                  # on the GPU against the CPU executor, the demo, two reliability
#                                  # cases (a stuck device, a program too big for the GPU), then
#                                  # bench/gpu_compare.py's table (JAX on the GPU vs xshard on 1
#                                  # and N virtual devices)
#
# `run` takes under 8 minutes on an H200; set GPU_CHECK_QUICK=1 for a 2-minute smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
PACK=gpu-pack

pack() {
  local build=${BUILD_DIR:-build}
  cmake --build "$build" -j "$(nproc)" --target xshard xs_cuda_test
  rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib" "$PACK/corpus"
  cp "$build/xshard" "$build/src/xshard/cuda/xs_cuda_test" "$PACK/bin/"
  # Every shared library the binaries name, except glibc's and the CUDA toolkit's (the GPU machine
  # has the same CUDA 13 libraries; xshard opens them itself, see cuda/dynamic_library.h).
  for bin in "$PACK"/bin/*; do
    ldd "$bin" | awk '/=> \// {print $3}'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      libcuda*|libcublas*|libnvrtc*|libnccl*|libcudnn*|libcudart*) ;;
      *) cp -L "$lib" "$PACK/lib/" ;;
    esac
  done
  local corpus=${XSHARD_CORPUS_DIR:-../shared/corpus/xla}
  if [[ -d $corpus ]]; then cp -r "$corpus/." "$PACK/corpus/"; fi
  tar -C "$PACK" -cJf "$PACK.tar.xz" . && rm -rf "$PACK" && mkdir "$PACK" && mv "$PACK.tar.xz" "$PACK/"
  grep -qx "/$PACK/" .git/info/exclude 2>/dev/null || echo "/$PACK/" >> .git/info/exclude
  du -sh "$PACK"
  echo "carry '$PACK' to the GPU machine and run: scripts/gpu-check.sh run"
}

run() {
  [[ -f $PACK/gpu-pack.tar.xz ]] || { echo "error: $PACK/gpu-pack.tar.xz not found: run 'scripts/gpu-check.sh pack' on a build machine and carry $PACK" >&2; exit 1; }
  local dir=/tmp/xshard-gpu-pack
  rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xJf "$PACK/gpu-pack.tar.xz"
  export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export XSHARD_CORPUS_DIR="$dir/corpus" XSHARD_SOURCE_DIR="$PWD" XSHARD_CACHE_DIR=/tmp/xshard-kernel-cache
  local xs="$dir/bin/xshard" rc=0
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
  echo "== 1. the cuda tests (GPU tests, the corpus and the jax_compare programs against the CPU executor)"
  # Less the checks CI already runs without a GPU (the host emulator, NVRTC compiles of every
  # corpus kernel): minutes of host work the device time is too short for.
  "$dir/bin/xs_cuda_test" --gtest_brief=1 \
    --gtest_filter='-*OnTheHost*:*WhenTheKernelsRunOnTheHost:*HostHarness*:*GenerateAndCompile:*GeneratesAndCompiles' || rc=1
  echo "== 2. xshard demo --platform cuda"
  "$xs" demo --platform cuda --devices 8 | tail -n 20 || rc=1
  echo "== 3. reliability on the GPU (issue 26): a stuck device, a program too big for the GPU"
  # Device 0 loops forever on the host while devices 1-3 wait at an all-reduce: after
  # --collective-timeout every device stops (the looping one through the run's monitor) and the
  # run fails in one line naming the collective, never a hang (timeout 120 turns one into exit 124).
  local m=/tmp/xshard-stuck.hlo out code t0 ms
  sed "s/num_partitions=2/num_partitions=4/; s/{{0,1}}/{{0,1,2,3}}/" tests/data/reliability/spmd_one_device_loops.hlo > "$m"
  t0=$(date +%s%N)
  code=0; out=$(timeout 120 "$xs" run "$m" --random-args 1 --collective-timeout 1 --platform cuda 2>&1) || code=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "stuck device on 4 virtual devices: exit $code after $ms ms (start-up included): $(printf '%s' "$out" | head -c 300)"
  [[ $code == 1 && $out == *"timed out after 1000 ms"* ]] || { echo "FAILED: expected exit 1 and the all-reduce's timeout"; rc=1; }
  # A 149 GiB intermediate (an outer product, then its sum) on a 141 GB GPU: one line naming
  # the GPU, the bytes and what is free; exit 1.
  m=/tmp/xshard-oom.hlo
  printf '%s\n' 'HloModule oom' 'add { a = f32[] parameter(0)' ' b = f32[] parameter(1)' ' ROOT s = f32[] add(a, b) }' \
    'ENTRY main { x = f32[200000,1] parameter(0)' ' y = f32[1,200000] parameter(1)' \
    ' d = f32[200000,200000] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}' \
    ' z = f32[] constant(0)' ' ROOT r = f32[] reduce(d, z), dimensions={0,1}, to_apply=add }' > "$m"
  code=0; out=$(timeout 120 "$xs" run "$m" --random-args 1 --platform cuda 2>&1) || code=$?
  echo "program too big for the GPU: exit $code: $out"
  [[ $code == 1 && $out == *"out of memory"* && $(printf '%s\n' "$out" | wc -l) == 1 ]] || { echo "FAILED: expected one out-of-memory line and exit 1"; rc=1; }
  echo "== 4. bench/gpu_compare.py"
  local quick=()
  [[ ${GPU_CHECK_QUICK:-0} == 1 ]] && quick=(--quick)
  python3 bench/gpu_compare.py --xshard "$xs" "${quick[@]}" --json /tmp/gpu_compare.json || rc=1
  [[ -n ${OUT:-} ]] && cp /tmp/gpu_compare.json "$OUT/" 2>/dev/null || true
  return $rc
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh pack|run" >&2; exit 1 ;;
esac
