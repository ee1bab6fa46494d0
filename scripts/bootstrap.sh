#!/usr/bin/env bash
# Installs everything kernel-harness needs to build and test on a Debian 12 machine.
# Idempotent: a second run changes nothing and takes seconds.
#   - Debian packages: compilers' companions and header/static libraries we link.
#     gnuplot-nox draws the plots of kh report.
#   - PyPI: the DLPack >= 1.1 and TVM-FFI headers (from the apache-tvm-ffi wheel) and the CUPTI
#     headers and library matching nvcc 13.0 (the toolkit here ships the library without its
#     headers), unpacked into .deps/ inside the checkout, so no Python environment is modified.
#   - numpy for the python3 on PATH, when it has none (unpacked into .deps/python): the Python
#     worker hands candidates numpy arrays where torch is absent, which is how CI tests it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps="$root/.deps"
TVM_FFI_VERSION="0.1.15.post2"
CUPTI_VERSION="13.0.85"
NUMPY_VERSION="2.2.6"

apt_packages=(
  build-essential cmake ninja-build pkg-config python3 python3-pip unzip
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libfmt-dev libsqlite3-dev
  libgtest-dev libgmock-dev clang-format gnuplot-nox
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

stamp="$deps/tvm-ffi/.version"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$TVM_FFI_VERSION" ]; then
  echo "bootstrap: fetching apache-tvm-ffi==$TVM_FFI_VERSION headers (DLPack >= 1.1)"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "apache-tvm-ffi==$TVM_FFI_VERSION"
  rm -rf "$deps/tvm-ffi"
  mkdir -p "$deps/tvm-ffi"
  (cd "$tmp" && unzip -q -o ./*.whl 'tvm_ffi/include/*')
  mv "$tmp/tvm_ffi/include" "$deps/tvm-ffi/include"
  echo "$TVM_FFI_VERSION" >"$stamp"
fi

stamp="$deps/cupti/.version"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$CUPTI_VERSION" ]; then
  echo "bootstrap: fetching nvidia-cuda-cupti==$CUPTI_VERSION (CUPTI headers and library)"
  tmp_cupti="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp_cupti" \
    "nvidia-cuda-cupti==$CUPTI_VERSION"
  rm -rf "$deps/cupti"
  mkdir -p "$deps/cupti/lib"
  (cd "$tmp_cupti" && unzip -q -o ./*.whl 'nvidia/cu13/include/cupti*.h' \
    'nvidia/cu13/include/cuda_stdint.h' 'nvidia/cu13/include/generated_*' 'nvidia/cu13/lib/libcupti.so.13')
  mv "$tmp_cupti/nvidia/cu13/include" "$deps/cupti/include"
  mv "$tmp_cupti/nvidia/cu13/lib/libcupti.so.13" "$deps/cupti/lib/"
  rm -rf "$tmp_cupti"
  echo "$CUPTI_VERSION" >"$stamp"
fi

python_tag="$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"
stamp="$deps/python/.numpy-$python_tag"
if ! python3 -c 'import numpy' 2>/dev/null && [ ! -f "$stamp" ]; then
  echo "bootstrap: fetching numpy==$NUMPY_VERSION for $python_tag (the Python worker's CPU tests)"
  tmp_numpy="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp_numpy" \
    "numpy==$NUMPY_VERSION"
  rm -rf "$deps/python"
  mkdir -p "$deps/python"
  unzip -q -o "$tmp_numpy"/numpy-*.whl -d "$deps/python"
  rm -rf "$tmp_numpy"
  touch "$stamp"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "bootstrap: note: nvcc not found; CUDA parts are skipped (the CPU build and tests still work)"
fi
echo "bootstrap: ok"
