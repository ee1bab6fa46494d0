#!/usr/bin/env bash
# Builds and runs bench/micro/grid_barrier.cu on the GPU of this machine; prints its JSON.
# Usage: bench/micro/run_grid_barrier.sh [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
dir=${1:-build/micro}
mkdir -p "$dir"
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$dir/grid_barrier" "$(dirname "$0")/grid_barrier.cu"
"$dir/grid_barrier"
