#!/usr/bin/env bash
# Compares two xshard binaries on the same modules, the way a shared, noisy machine allows: short
# runs of each binary alternate (A B A B ...), and the minimum and median of the per-run medians are
# printed side by side with the count of pairs the second binary won.
#
# Usage: bench/ab_binaries.sh OLD_XSHARD NEW_XSHARD RUNS DIR [DIR ...]
#   DIR holds module.hlo and its arguments arg0.npy, arg1.npy, ... (what
#   `bench/jax_compare/jax_compare.py --keep --out OUT` leaves in OUT/<workload>/).
# Environment: DEVICES (default 1), ITERS (timed calls per run, default 5), WARMUP (default 1).
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: $0 OLD_XSHARD NEW_XSHARD RUNS DIR [DIR ...]" >&2
  exit 1
fi
old=$1 new=$2 runs=$3
shift 3
for bin in "$old" "$new"; do
  [ -x "$bin" ] || { echo "$0: $bin is not an executable xshard binary" >&2; exit 1; }
done
case $runs in '' | *[!0-9]* | 0) echo "$0: RUNS must be a whole number >= 1, got '$runs'" >&2; exit 1 ;; esac
median() {
  "$1" bench run "$2/module.hlo" --devices "${DEVICES:-1}" --iters "${ITERS:-5}" --warmup "${WARMUP:-1}" \
    --args "${@:3}" | sed -n 's/^median_ms=//p'
}
for dir in "$@"; do
  [ -f "$dir/module.hlo" ] || { echo "$0: $dir/module.hlo not found" >&2; exit 1; }
  mapfile -t args < <(ls "$dir"/arg*.npy 2>/dev/null | sort -V)
  a=() b=()
  for ((i = 0; i < runs; ++i)); do
    a+=("$(median "$old" "$dir" "${args[@]}")")
    b+=("$(median "$new" "$dir" "${args[@]}")")
  done
  python3 - "$(basename "$dir")" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
name, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
wins = sum(1 for x, y in zip(a, b) if y < x)
print(f"{name:24s} min {min(a):.2f} -> {min(b):.2f} ms ({min(b) / min(a):.3f})   "
      f"median {statistics.median(a):.2f} -> {statistics.median(b):.2f} ms "
      f"({statistics.median(b) / statistics.median(a):.3f})   new faster in {wins} of {len(a)}")
PY
done
