#!/usr/bin/env bash
# Builds and runs bench/micro/gather_rows.cu on the GPU of this machine; prints its JSON.
# Usage: bench/micro/run_gather_rows.sh [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
dir=${1:-build/micro}
mkdir -p "$dir"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o "$dir/gather_rows" \
  "$(dirname "$0")/gather_rows.cu"
"$dir/gather_rows"
