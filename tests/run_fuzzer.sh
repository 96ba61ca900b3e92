#!/usr/bin/env bash
# Runs one libFuzzer target briefly from its committed seed inputs; new inputs go to a temp dir so
# the repository is never written. Exit 77 (ctest: skipped) when the target was not built; a
# finding exits 1 (libFuzzer's own default, 77, would read as "skipped").
set -u
# Usage: run_fuzzer.sh BINARY SECONDS SEED_DIR...
binary=$1 seconds=$2
shift 2
if [ ! -x "$binary" ]; then
  echo "skipped: $binary not built (scripts/test.sh builds it with clang)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for seeds in "$@"; do
  [ -d "$seeds" ] && find "$seeds" -maxdepth 1 -type f -exec cp {} "$work"/ \;
done
# -entropic=0: libFuzzer's default (entropic) scheduler updates every corpus entry's feature
# frequencies as seeds load, quadratic in the corpus; pipeline_fuzz's ~1,450 seeds took 211 s to
# load with it and 21 s without (clang 14, 2 cores), and left no time for mutations.
"$binary" -max_total_time="$seconds" -entropic=0 -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work" 2>&1 | tail -n 25
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  for crash in "$work"/crash-* "$work"/timeout-* "$work"/leak-* "$work"/oom-*; do
    [ -e "$crash" ] || continue
    echo "failing input ($crash), base64:"; base64 "$crash" | head -c 4000; echo
  done
fi
exit "$status"
