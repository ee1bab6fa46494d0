#!/usr/bin/env bash
# Copies kh and the Python worker's library, stripped, into one folder that travels to a GPU
# machine: the RelWithDebInfo kh is about 300 MB with its debug sections and about 10 MB without.
# kh finds libkh_worker.so beside itself. kh links glibc alone (SQLite and the C++ runtime are
# static, the driver is opened at run time); the worker library also needs libstdc++, which the
# Python loading it has. Both ran unchanged on an Ubuntu 24.04 H200 machine built here. The
# candidate builds there also need .deps/tvm-ffi (DLPack headers) and .deps/cupti (the cupti timer).
#
# Usage: scripts/pack_binaries.sh DIR [BUILD_DIR]     then on the GPU machine: KH=DIR/kh bench/...
set -euo pipefail
dir=${1:?usage: scripts/pack_binaries.sh DIR [BUILD_DIR]}
build=${2:-build/default}
mkdir -p "$dir"
for f in kh libkh_worker.so; do
  [ -f "$build/$f" ] || { echo "$build/$f: not built (cmake --workflow --preset default)" >&2; exit 1; }
  strip -o "$dir/$f" "$build/$f"
done
du -sh "$dir/kh" "$dir/libkh_worker.so"
