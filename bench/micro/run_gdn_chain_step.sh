#!/usr/bin/env bash
# Builds bench/micro/gdn_chain_step.cu against the GDN prefill sources of FOLDER (default the
# library's) at its candidate.toml's first [params] values and runs it on the GPU of this
# machine; prints its JSON, ptxas's register and spill report on stderr.
# Usage: bench/micro/run_gdn_chain_step.sh [FOLDER] [BUILD_DIR]   (needs nvcc and an sm_90a GPU)
set -eu
folder=${1:-kernels/gdn_prefill}
dir=${2:-build/micro}
mkdir -p "$dir"
defines=$("$(dirname "$0")/candidate_defines.sh" "$folder")
# The compiler's whole output goes to a file: on failure it is printed and nothing runs (a stale
# binary from an earlier build must not answer for this source); else only ptxas's report.
log="$dir/gdn_chain_step.build.log"
# shellcheck disable=SC2086  # defines is a list of flags
if ! nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v $defines -I"$folder" \
  -Iinclude -o "$dir/gdn_chain_step" "$(dirname "$0")/gdn_chain_step.cu" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
grep -E "registers|spill" "$log" >&2 || true
"$dir/gdn_chain_step"
