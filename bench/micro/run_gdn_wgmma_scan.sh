#!/usr/bin/env bash
# Builds bench/micro/gdn_wgmma_scan.cu against the GDN prefill folder given (default: the
# library's; its scan is the baseline, compiled at the folder's first [params] values) and runs it
# on the GPU of this machine; prints its JSON.
# Usage: bench/micro/run_gdn_wgmma_scan.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
folder=${1:-kernels/gdn_prefill}
dir=${2:-build/micro}
mkdir -p "$dir"
# shellcheck disable=SC2046  # one flag per line
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a $("$here/candidate_defines.sh" "$folder") \
  -I"$folder" -Iinclude -o "$dir/gdn_wgmma_scan" "$here/gdn_wgmma_scan.cu"
"$dir/gdn_wgmma_scan"
