#!/usr/bin/env bash
# Builds and runs bench/micro/dsa_timeline.cu against the split route's sources of FOLDER (a
# kernels/ or candidates/ folder with trace.cuh) at its first [params] values, or at the values
# of DSA_PARAMS="NAME=value ..." where given; prints its JSON.
# Usage: bench/micro/run_dsa_timeline.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
folder=${1:-kernels/dsa_attention}
dir=${2:-build/micro}
mkdir -p "$dir"
# shellcheck disable=SC2086  # DSA_PARAMS is a list of NAME=value
defines=$("$(dirname "$0")/candidate_defines.sh" "$folder" ${DSA_PARAMS:-})
# shellcheck disable=SC2086  # defines is a list of flags
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DDSA_TRACE $defines -I"$folder" \
  -o "$dir/dsa_timeline" "$(dirname "$0")/dsa_timeline.cu"
"$dir/dsa_timeline"
