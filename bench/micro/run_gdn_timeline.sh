#!/usr/bin/env bash
# Builds and runs bench/micro/gdn_timeline.cu against the GDN prefill sources of FOLDER (a
# kernels/ or candidates/ folder with trace.cuh) at its first [params] values, or at the values
# of GDN_PARAMS="NAME=value ..." where given; prints its JSON.
# Usage: bench/micro/run_gdn_timeline.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
folder=${1:-kernels/gdn_prefill}
dir=${2:-build/micro}
mkdir -p "$dir"
# shellcheck disable=SC2086  # GDN_PARAMS is a list of NAME=value
defines=$("$(dirname "$0")/candidate_defines.sh" "$folder" ${GDN_PARAMS:-})
# shellcheck disable=SC2086  # defines is a list of flags
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DGDN_TRACE $defines -I"$folder" \
  -Iinclude -o "$dir/gdn_timeline" "$(dirname "$0")/gdn_timeline.cu"
"$dir/gdn_timeline"
