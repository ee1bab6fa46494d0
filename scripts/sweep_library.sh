#!/usr/bin/env bash
# The main job: sweeps the kernel library's entry for each definition that has one (the example
# candidate where the library has none yet) over the shipped workloads on every visible GPU, with
# kh's strict checks and official-aligned cupti timing, and writes a report per definition under
# <store>/reports/<definition>/report.md. Results land in the store (.kh/store.db by default), so
# a killed run continues with the same command (--resume is passed).
#
# Usage: scripts/sweep_library.sh [--store DIR] [extra kh sweep options...]
# Without a GPU it says so in one line and exits 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kh="${KH:-$root/build/default/kh}"
store=".kh"
if [ "${1:-}" = "--store" ]; then store="$2"; shift 2; fi

if ! "$kh" sweep --help >/dev/null 2>&1; then
  echo "sweep_library: $kh is not built; run: cmake --workflow --preset default" >&2
  exit 1
fi
# CUDA_VISIBLE_DEVICES set but empty hides every GPU, as it does from CUDA.
if { [ -n "${CUDA_VISIBLE_DEVICES+x}" ] && [ -z "$CUDA_VISIBLE_DEVICES" ]; } ||
  ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "sweep_library: no NVIDIA GPU is visible on this machine; the main job needs one" >&2
  exit 1
fi

# The library entry of a definition: kernels/*/candidate.toml naming it, else examples/<def>/.
entry_for() {
  local def="$1" toml
  for toml in "$root"/kernels/*/candidate.toml; do
    [ -f "$toml" ] || continue
    if grep -q "definition *= *\"$def\"" "$toml"; then dirname "$toml"; return; fi
  done
  [ -f "$root/examples/$def/candidate.toml" ] && echo "$root/examples/$def"
}

status=0
for json in "$root"/definitions/*/*.json; do
  def="$(basename "$json" .json)"
  cand="$(entry_for "$def")"
  [ -n "$cand" ] || { echo "sweep_library: $def: no library entry or example, skipped"; continue; }
  echo "== $def: $(basename "$cand")"
  "$kh" sweep "$cand" --backend cuda --timing cupti --resume --root "$root" --store "$store" "$@" \
    || status=$?
  "$kh" report "$def" --root "$root" --store "$store" || status=$?
done
exit "$status"
