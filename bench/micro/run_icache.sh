#!/usr/bin/env bash
# Builds and runs bench/micro/icache.cu on the GPU of this machine; prints its JSON, and the SASS
# size of its kernels (cuobjdump, when present) on stderr.
# Usage: bench/micro/run_icache.sh [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
dir=${1:-build/micro}
mkdir -p "$dir"
nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o "$dir/icache" "$(dirname "$0")/icache.cu"
command -v cuobjdump >/dev/null && cuobjdump -res-usage "$dir/icache" >&2 || true
"$dir/icache"
