#!/usr/bin/env bash
# Builds bench/micro/gdn_scan.cu against each GDN prefill folder given (default: the
# library's), at the folder's first [params] values, and runs it on the GPU of this machine;
# prints one JSON object per folder (the same inputs for each).
# Usage: bench/micro/run_gdn_scan.sh [FOLDER...]   (needs nvcc and an sm_90a GPU; BUILD_DIR
# in the environment, default build/micro)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${BUILD_DIR:-build/micro}
mkdir -p "$dir"
[ $# -gt 0 ] || set -- kernels/gdn_prefill
for folder in "$@"; do
  bin="$dir/gdn_scan_$(echo "$folder" | tr '/' '_')"
  # shellcheck disable=SC2046  # one flag per line
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a $("$here/candidate_defines.sh" "$folder") \
    -I"$folder" -Iinclude -o "$bin" "$here/gdn_scan.cu"
  "$bin" "$folder"
done
