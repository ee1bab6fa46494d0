#!/usr/bin/env bash
# The cluster-multicast scan of candidates/gdn_prefill in variants, each through
# bench/micro/gdn_scan.cu; prints one line per variant (us per launch at seqs/groups). Run it
# at commit 351e2d7, where that folder exists (it was deleted after the measurement).
set -u
mk() { # name sed-exprs...
  local name=$1; shift
  rm -rf /tmp/var/$name; mkdir -p /tmp/var; cp -r candidates/gdn_prefill /tmp/var/$name
  for e in "$@"; do sed -i "$e" /tmp/var/$name/small_chunk_scan.cuh; done
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I/tmp/var/$name -Iinclude -o /tmp/var/$name/bin bench/micro/gdn_scan.cu || return
  timeout 60 /tmp/var/$name/bin $name | python3 -c "
import json,sys; d=json.load(sys.stdin)
print(d['folder'], 'diff', d['worst_abs_diff_vs_reference']['folder'], ' '.join('%d/%d:%.1f'%(c['seqs'],c['groups'],c['us']) for c in d['cases'] if c['kernel']=='folder'))"
}
mk base
mk st8 's/kScanSlice = 32;/kScanSlice = 16;/' 's/kScanStages = 4;/kScanStages = 8;/'
mk c4 's/kScanCluster = 8;/kScanCluster = 4;/'
mk c2 's/kScanCluster = 8;/kScanCluster = 2;/'
mk c1 's/kScanCluster = 8;/kScanCluster = 1;/'
mk ks1 's/kScanKSplit = 2;/kScanKSplit = 1;/'
mk ks4 's/kScanKSplit = 2;/kScanKSplit = 4;/'
mk c1st8 's/kScanCluster = 8;/kScanCluster = 1;/' 's/kScanSlice = 32;/kScanSlice = 16;/' 's/kScanStages = 4;/kScanStages = 8;/'
