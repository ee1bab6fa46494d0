#!/usr/bin/env bash
# Builds and runs bench/micro/gdn_cp_timeline.cu against the GDN prefill sources of FOLDER at its
# first [params] values, or at those of GDN_PARAMS="NAME=value ..."; prints its JSON. The folder's
# trace.cuh must have the context-parallel marks (GDN_TRACE_HAS_CP; kernels/gdn_prefill has them
# since 0f171e188436, compiled out without -DGDN_TRACE). GDN_BUILD_ONLY=1 builds
# BUILD_DIR/gdn_cp_timeline without running it (several builds at once, run one at a time later).
# Usage: bench/micro/run_gdn_cp_timeline.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
folder=${1:-kernels/gdn_prefill}
dir=${2:-build/micro}
mkdir -p "$dir"
if ! grep -q GDN_TRACE_HAS_CP "$folder/trace.cuh"; then
  echo "run_gdn_cp_timeline.sh: $folder/trace.cuh lacks the context-parallel marks" \
    "(GDN_TRACE_HAS_CP); a folder older than 0f171e188436 needs them added first" >&2
  exit 2
fi
# shellcheck disable=SC2086  # GDN_PARAMS is a list of NAME=value
defines=$("$here/candidate_defines.sh" "$folder" ${GDN_PARAMS:-})
# shellcheck disable=SC2086  # defines is a list of flags
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DGDN_TRACE $defines -I"$folder" \
  -Iinclude -o "$dir/gdn_cp_timeline" "$here/gdn_cp_timeline.cu"
[ "${GDN_BUILD_ONLY:-0}" = 1 ] || "$dir/gdn_cp_timeline"
