#!/usr/bin/env bash
# The engine benchmark of issue 4: measures this GPU's ceilings (kh ceilings), then the wall time
# of `kh eval` over each definition's full official workload set at official counts — 3 strict
# correctness trials judged by the GPU references, then cupti timing with the official
# warmup/iterations/trials — for the example candidates, with the roofline floor of every workload.
# Writes OUT_DIR/ceilings.json, OUT_DIR/timed_<definition>.json and OUT_DIR/wall_seconds.txt.
#
# Usage (GPU machine, repository root, after a build): bench/engine/sweep_wall_time.sh OUT_DIR
set -u
out=${1:?usage: bench/engine/sweep_wall_time.sh OUT_DIR}
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
mkdir -p "$out"
"$kh" ceilings --json --out "$out/ceilings.json" >"$out/ceilings_report.json" 2>"$out/ceilings.log"
echo "ceilings exit $?"
: >"$out/wall_seconds.txt"
for dir in examples/*/; do
  def=$(basename "$dir")
  start=$(date +%s.%N)
  "$kh" eval "$dir" --backend cuda --trials 3 --timing cupti --ceilings "$out/ceilings.json" \
    --json --cache "$cache" --logs "$out/logs" >"$out/timed_$def.json" 2>"$out/timed_$def.log"
  status=$?
  end=$(date +%s.%N)
  echo "$def $status $(python3 -c "print(round($end - $start, 2))")" | tee -a "$out/wall_seconds.txt"
done
