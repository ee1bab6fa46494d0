#!/usr/bin/env bash
# Builds and runs bench/micro/gdn_cp_timeline.cu against the GDN prefill sources of FOLDER at its
# first [params] values, or at those of GDN_PARAMS="NAME=value ..."; prints its JSON. A folder
# whose trace.cuh lacks the context-parallel marks (GDN_TRACE_HAS_CP; the library until a
# promotion brings them) is copied and given them by gdn_cp_trace_marks.patch (compiled out
# without -DGDN_TRACE, so the harness and the library never see them).
# Usage: bench/micro/run_gdn_cp_timeline.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
folder=${1:-kernels/gdn_prefill}
dir=${2:-build/micro}
mkdir -p "$dir"
if ! grep -q GDN_TRACE_HAS_CP "$folder/trace.cuh"; then
  marked="$(mktemp -d)/gdn_prefill"  # outside the repository: git apply patches it as given
  cp -r "$folder" "$marked"
  (cd "$marked" && { patch -s -p1 <"$here/gdn_cp_trace_marks.patch" 2>/dev/null ||
    git apply -p1 "$here/gdn_cp_trace_marks.patch"; })
  folder=$marked
fi
# shellcheck disable=SC2086  # GDN_PARAMS is a list of NAME=value
defines=$("$here/candidate_defines.sh" "$folder" ${GDN_PARAMS:-})
# shellcheck disable=SC2086  # defines is a list of flags
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DGDN_TRACE $defines -I"$folder" \
  -Iinclude -o "$dir/gdn_cp_timeline" "$here/gdn_cp_timeline.cu"
"$dir/gdn_cp_timeline"
