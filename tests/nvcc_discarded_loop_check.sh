#!/bin/sh
# The workaround lint_if_constexpr_loops.py asks for must hold with the installed nvcc: a discarded
# `if constexpr` whose braced body is a loop keeps the statement after it (the global stores of
# k<false> below). Also prints whether this nvcc still drops that statement when the loop is the
# unbraced body (the miscompilation of nvcc 13.0 the lint guards against).
# Usage: nvcc_discarded_loop_check.sh NVCC WORK_DIR
set -u
nvcc=$1
dir=$2
mkdir -p "$dir"
stores() {  # $1: "{" and "}" around the discarded body, or nothing
  open=$1
  close=$2
  cat >"$dir/discarded_loop.cu" <<CU
template <bool kB>
__global__ void k(int* p, int n) {
  auto f = [&](int x) {
    if constexpr (kB) $open
      for (int i = 0; i < n; ++i) { p[i] = x; }
    $close
    for (int i = 0; i < n; ++i) p[i + 100] = 0;
  };
  f(threadIdx.x);
}
template __global__ void k<false>(int*, int);
CU
  "$nvcc" -std=c++17 -arch=sm_90a -ptx -o "$dir/discarded_loop.ptx" "$dir/discarded_loop.cu" || return 1
  grep -c "st.global" "$dir/discarded_loop.ptx" || true
}
braced=$(stores "{" "}") || { echo "nvcc failed"; exit 1; }
unbraced=$(stores "" "") || { echo "nvcc failed"; exit 1; }
echo "stores after a discarded loop: braced body $braced, unbraced body $unbraced"
[ "$unbraced" -gt 0 ] || echo "this nvcc drops the statement after an unbraced discarded loop"
[ "$braced" -gt 0 ]
