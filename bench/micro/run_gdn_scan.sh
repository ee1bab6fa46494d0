#!/usr/bin/env bash
# Builds bench/micro/gdn_scan.cu against each GDN prefill folder given (default: the
# library's), at the folder's first [params] values, and runs it on the GPU of this machine;
# prints one JSON object per folder (the same inputs for each). FOLDER@NAME=value[,NAME=value...]
# builds the folder with those [params] values instead (as kh's folder@knobs candidates).
# Usage: bench/micro/run_gdn_scan.sh [FOLDER[@KNOBS]...]   (needs nvcc and an sm_90a GPU;
# BUILD_DIR in the environment, default build/micro)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${BUILD_DIR:-build/micro}
mkdir -p "$dir"
[ $# -gt 0 ] || set -- kernels/gdn_prefill
for spec in "$@"; do
  folder=${spec%%@*}
  knobs=()
  [ "$spec" = "$folder" ] || IFS=, read -r -a knobs <<<"${spec#*@}"
  bin="$dir/gdn_scan_$(echo "$spec" | tr '/@=,' '____')"
  # shellcheck disable=SC2046  # one flag per line
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
    $("$here/candidate_defines.sh" "$folder" "${knobs[@]}") -I"$folder" -Iinclude -o "$bin" \
    "$here/gdn_scan.cu"
  "$bin" "$spec"
done
