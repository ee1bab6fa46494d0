#!/usr/bin/env bash
# kh promote of a library kernel (or a candidate) on one GPU, with what comes home from the run:
# the decision JSON, the log, the GPU's name and driver, and a bundle of everything the run stored
# (kh store export --since the run's start) for memory/. memory/ is imported as usual, so the
# retained candidate is the baseline and an interrupted replay continues with its seed.
# bench/kernels/summarize_promotion.py turns OUT into a bench/results file.
#
# Usage: bench/kernels/run_promote.sh OUT CANDIDATE [kh promote arguments...]
#   e.g. bench/kernels/run_promote.sh out/promote kernels/gdn_prefill --replay-seed 16023
#   KH (default build/default/kh), KH_CACHE (build cache), KH_TIMING (default cupti),
#   PROMOTE_TIMEOUT_S (default 540: the bundle is exported even when the promotion is cut short).
set -u
out=${1:?usage: run_promote.sh OUT CANDIDATE [kh promote arguments...]}
cand=${2:?usage: run_promote.sh OUT CANDIDATE [kh promote arguments...]}
shift 2
kh=${KH:-build/default/kh}
cache=${KH_CACHE:-build/test-build-cache}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$out/gpu.txt" 2>&1
since=$(date -u +%Y-%m-%dT%H:%M:%S)
echo "$since" >"$out/since.txt"
t0=$(date +%s)
timeout "${PROMOTE_TIMEOUT_S:-540}" "$kh" promote "$cand" --backend cuda --timing "${KH_TIMING:-cupti}" \
  --cache "$cache" --json "$@" >"$out/promote.json" 2>"$out/promote.log"
status=$?
echo "promote rc=$status $(($(date +%s) - t0))s"
"$kh" store export --since "$since" -o "$out/promotion.khb" >/dev/null 2>&1 ||
  echo "kh store export failed" >&2
# Whether the folder is now the retained candidate (a folder@NAME=value candidate has no such check).
if [ -f "$cand/candidate.toml" ]; then
  def=$(sed -n 's/^definition *= *"\(.*\)"/\1/p' "$cand/candidate.toml")
  [ -n "$def" ] && "$kh" retained "$def" --source "$cand" 2>&1 | tail -n 1
fi
tail -n 5 "$out/promote.log"
exit $status
