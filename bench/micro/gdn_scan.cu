// Micro-benchmark: where the GDN prefill context-parallel scan's time goes
// (small_chunk_scan.cuh; kernels/gdn_prefill/ROOFLINE.md measured about 3.7 us per step at 8
// groups at 6ccd14d30333, three times its FMA and shared-memory issue). Times the scan kernel of
// the folder on the include path at several group counts (the slope is the step, the intercept
// the launch and prologue), the scan as it was at 6ccd14d30333 (`probe_stream_compute`) and two
// probes of that loop: one that stops streaming the maps after the first ring fill (no L2 traffic
// per step), one that streams them but skips the FMAs; and a form holding map columns in
// registers. Checks the folder's kernel, the old loop and the register form against a plain
// recurrence. Random maps scaled to keep the chain bounded. Prints one JSON object: mean
// microseconds per launch over kReps back-to-back launches (the workspace, a few MB, stays in L2
// as it does after the real map pass).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "small_chunk_scan.cuh"
#include "micro_common.cuh"

namespace {

using micro::ok;

using namespace khk::gdn_prefill;

constexpr int kReps = 200;

// The probes' loop is the scan as it was at 6ccd14d30333 (one thread per key column, 8 value
// rows per CTA, 16-row slices of every map read by every CTA through 16-byte cp.async).
constexpr int kProbeRows = 8, kProbeThreads = kHeadSize, kProbeSlice = 16;
constexpr int kProbeStages = kHeadSize / kProbeSlice, kProbeSlicesPerMap = kProbeStages;

struct ProbeSmem {
  float a[kProbeStages][kProbeSlice][kHeadSize];
  float e[2][kProbeRows][kHeadSize];
};

// Slice `slice` of the CTA's maps, the map's slices taken from `rotate` on (a CTA's order of the
// keys does not change its sums' terms, only their order).
__device__ __forceinline__ void probe_request_slice(const SmallGroupSpace& space, int64_t head,
                                                    int slice, int slices, int rotate,
                                                    ProbeSmem& s) {
  if (slice < slices) {
    const int part = (slice + rotate) % kProbeSlicesPerMap;
    const float* from = space.map(head, slice / kProbeSlicesPerMap) +
                        part * kProbeSlice * kHeadSize;
    float* to = &s.a[slice % kProbeStages][0][0];
    constexpr int kPieces = kProbeSlice * kHeadSize / 4;
    for (int u = static_cast<int>(threadIdx.x); u < kPieces; u += kProbeThreads)
      copy_16b_async(to + 4 * u, from + 4 * u, true);
  }
  copy_commit();
}

// The probes' loop, with its two costs separable.
template <bool kStreamMaps, bool kCompute, bool kRotate = false>
__global__ void __launch_bounds__(kProbeThreads)
    scan_probe(SmallGroupSpace space, float* new_state) {
  extern __shared__ __align__(16) unsigned char smem[];
  ProbeSmem& s = *reinterpret_cast<ProbeSmem*>(smem);
  constexpr int kCtasPerHead = kHeadSize / kProbeRows;
  const int64_t head = blockIdx.x / kCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kCtasPerHead) * kProbeRows;
  const int j = static_cast<int>(threadIdx.x);
  const int steps = space.groups - 1, slices = steps * kProbeSlicesPerMap;
  // With kRotate the CTAs of a head read each map from different slices at any one time.
  const int rotate = kRotate ? static_cast<int>(blockIdx.x % kCtasPerHead) : 0;
  for (int slice = 0; slice + 1 < kProbeStages; ++slice)
    probe_request_slice(space, head, slice, slices, rotate, s);
  float b[kProbeRows], acc[kProbeRows];
  const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
  const float* b1 = space.exit(head, 1) + row0 * kHeadSize;
#pragma unroll
  for (int r = 0; r < kProbeRows; ++r) {
    s.e[0][r][j] = e1[r * kHeadSize + j];
    b[r] = b1[r * kHeadSize + j];
    acc[r] = 0.0f;
  }
  for (int slice = 0; slice < slices; ++slice) {
    const int step = slice / kProbeSlicesPerMap, part = slice % kProbeSlicesPerMap;
    const int key0 = (part + rotate) % kProbeSlicesPerMap * kProbeSlice;
    copy_wait<kProbeStages - 2>();
    __syncthreads();
    if (kStreamMaps)
      probe_request_slice(space, head, slice + kProbeStages - 1, slices, rotate, s);
    else
      copy_commit();
    const float(&a)[kProbeSlice][kHeadSize] = s.a[slice % kProbeStages];
    const float(&e)[kProbeRows][kHeadSize] = s.e[step & 1];
    if (kCompute) {
#pragma unroll
      for (int k = 0; k < kProbeSlice; k += 4) {
        const int key = key0 + k;
#pragma unroll
        for (int r = 0; r < kProbeRows; ++r) {
          const float4 x = *reinterpret_cast<const float4*>(&e[r][key]);
          acc[r] = fmaf(x.x, a[k][j], acc[r]);
          acc[r] = fmaf(x.y, a[k + 1][j], acc[r]);
          acc[r] = fmaf(x.z, a[k + 2][j], acc[r]);
          acc[r] = fmaf(x.w, a[k + 3][j], acc[r]);
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < kProbeRows; ++r) acc[r] += a[r][j] * e[r][key0];
    }
    if (part + 1 == kProbeSlicesPerMap) {
      const bool more = step + 1 < steps;
      float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                   row0 * kHeadSize;
      const float* next_b = more ? space.exit(head, step + 2) + row0 * kHeadSize : nullptr;
#pragma unroll
      for (int r = 0; r < kProbeRows; ++r) {
        const float x = acc[r] + b[r];
        s.e[(step + 1) & 1][r][j] = x;
        out[r * kHeadSize + j] = x;
        b[r] = more ? next_b[r * kHeadSize + j] : 0.0f;
        acc[r] = 0.0f;
      }
    }
  }
}

// A form without per-slice barriers: each thread holds half of one map column in registers
// (loaded from L2 a step ahead, coalesced across the warp), the E rows in shared memory, one CTA
// barrier per step. 8 value rows per CTA, 256 threads: lane l of warp w owns column
// w * 16 + l % 16 and keys [64 (l / 16), 64 (l / 16) + 64); the two halves meet by a shuffle.
constexpr int kColThreads = 2 * kHeadSize;
constexpr int kColKeys = kHeadSize / 2;
constexpr int kEStride = kHeadSize + 4;  // the second half 4 floats on: no bank conflict

__device__ __forceinline__ int e_slot(int key) { return key + (key >= kColKeys ? 4 : 0); }

__global__ void __launch_bounds__(kColThreads)
    scan_columns(SmallGroupSpace space, float* new_state) {
  __shared__ __align__(16) float e[2][kProbeRows][kEStride];
  constexpr int kCtasPerHead = kHeadSize / kProbeRows;
  const int64_t head = blockIdx.x / kCtasPerHead;
  const int row0 = static_cast<int>(blockIdx.x % kCtasPerHead) * kProbeRows;
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int j = warp * 16 + lane % 16, half = lane / 16, key0 = half * kColKeys;
  const int steps = space.groups - 1;
  // This thread finishes rows [4 half, 4 half + 4) of its column.
  constexpr int kOwn = kProbeRows / 2;
  float a[kColKeys], b[kOwn];
  {
    const float* map = space.map(head, 0) + key0 * kHeadSize + j;
#pragma unroll
    for (int i = 0; i < kColKeys; ++i) a[i] = map[i * kHeadSize];
    const float* e1 = space.exit(head, 0) + row0 * kHeadSize;
    const float* b1 = space.exit(head, 1) + row0 * kHeadSize;
#pragma unroll
    for (int r = 0; r < kOwn; ++r) {
      const int row = half * kOwn + r;
      e[0][row][e_slot(j)] = e1[row * kHeadSize + j];
      b[r] = b1[row * kHeadSize + j];
    }
  }
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    float next[kColKeys];
    if (more) {
      const float* map = space.map(head, step + 1) + key0 * kHeadSize + j;
#pragma unroll
      for (int i = 0; i < kColKeys; ++i) next[i] = map[i * kHeadSize];
    }
    float acc[kProbeRows];
#pragma unroll
    for (int r = 0; r < kProbeRows; ++r) acc[r] = 0.0f;
    const float(&ec)[kProbeRows][kEStride] = e[step & 1];
#pragma unroll
    for (int i = 0; i < kColKeys; i += 4) {
#pragma unroll
      for (int r = 0; r < kProbeRows; ++r) {
        const float4 x = *reinterpret_cast<const float4*>(&ec[r][e_slot(key0 + i)]);
        acc[r] = fmaf(x.x, a[i], acc[r]);
        acc[r] = fmaf(x.y, a[i + 1], acc[r]);
        acc[r] = fmaf(x.z, a[i + 2], acc[r]);
        acc[r] = fmaf(x.w, a[i + 3], acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kProbeRows; ++r) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 16);
    float* out = (more ? space.exit(head, step + 1) : new_state + head * kStateFloats) +
                 row0 * kHeadSize;
    const float* next_b = more ? space.exit(head, step + 2) + row0 * kHeadSize : nullptr;
#pragma unroll
    for (int r = 0; r < kOwn; ++r) {
      const int row = half * kOwn + r;
      const float x = (half ? acc[kOwn + r] : acc[r]) + b[r];
      e[(step + 1) & 1][row][e_slot(j)] = x;
      out[row * kHeadSize + j] = x;
      b[r] = more ? next_b[row * kHeadSize + j] : 0.0f;
    }
    if (more) {
#pragma unroll
      for (int i = 0; i < kColKeys; ++i) a[i] = next[i];
    }
    __syncthreads();
  }
}

// The recurrence one (head, value row) per CTA, one thread per key column: the check.
__global__ void scan_reference(SmallGroupSpace space, float* new_state) {
  __shared__ float e[kHeadSize];
  const int64_t head = blockIdx.x / kHeadSize;
  const int row = static_cast<int>(blockIdx.x % kHeadSize), j = static_cast<int>(threadIdx.x);
  e[j] = space.exit(head, 0)[row * kHeadSize + j];
  __syncthreads();
  for (int step = 0; step + 1 < space.groups; ++step) {
    const bool more = step + 2 < space.groups;
    float* out = more ? space.exit(head, step + 1) : new_state + head * kStateFloats;
    float x = space.exit(head, step + 1)[row * kHeadSize + j];
    const float* a = space.map(head, step);
    for (int k = 0; k < kHeadSize; ++k) x = fmaf(e[k], a[k * kHeadSize + j], x);
    __syncthreads();
    e[j] = x;
    out[row * kHeadSize + j] = x;
    __syncthreads();
  }
}

using Kernel = void (*)(SmallGroupSpace, float*);

struct Form {
  const char* name;
  Kernel kernel;
  int threads, bytes, ctas_per_head;
  void launch(int num_seqs, int groups, float* workspace, float* state) const {
    const SmallGroupSpace space{workspace, groups, num_seqs, 0};
    const unsigned ctas = static_cast<unsigned>(num_seqs * kVHeads * ctas_per_head);
    kernel<<<ctas, threads, bytes>>>(space, state);
  }
};

// The folder's scan grid per head: a CTA per kScanRowsPerCta value rows, times the kernel's
// compile-time cluster width where its CTAs share rows (the cluster forms split the columns).
int scan_ctas_per_head() {
  cudaFuncAttributes attributes{};
  cudaFuncGetAttributes(&attributes, small_cp_scan_kernel);
  const int width = attributes.requiredClusterWidth;
  return kHeadSize / kScanRowsPerCta * (width > 0 ? width : 1);
}

// Mean microseconds per launch over kReps launches for (num_seqs, groups).
double time_scan(const Form& f, int num_seqs, int groups, float* workspace, float* state) {
  return micro::mean_launch_us(kReps, [&] { f.launch(num_seqs, groups, workspace, state); });
}

}  // namespace

int main(int argc, char** argv) {
  const char* folder = argc > 1 ? argv[1] : "folder";
  constexpr int kMaxSeqs = 2, kMaxGroups = 8;
  const size_t floats = SmallGroupSpace::matrix_floats(kMaxSeqs, kMaxGroups);
  std::vector<float> host(floats);
  unsigned x = 12345;
  for (auto& v : host) {  // entries of about 1/sqrt(128): products stay bounded
    x = x * 1664525u + 1013904223u;
    v = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 0.15f;
  }
  float *workspace = nullptr, *state = nullptr;
  if (!ok(cudaMalloc(&workspace, floats * sizeof(float)), "cudaMalloc") ||
      !ok(cudaMalloc(&state, kMaxSeqs * kVHeads * kStateFloats * sizeof(float)), "cudaMalloc"))
    return 1;
  cudaMemcpy(workspace, host.data(), floats * sizeof(float), cudaMemcpyHostToDevice);

  const Form forms[] = {
      {"folder", small_cp_scan_kernel, kScanThreadsPerCta, sizeof(SmallScanSmem),
       scan_ctas_per_head()},
      {"probe_stream_compute", scan_probe<true, true>, kProbeThreads, sizeof(ProbeSmem),
       kHeadSize / kProbeRows},
      {"probe_no_stream", scan_probe<false, true>, kProbeThreads, sizeof(ProbeSmem),
       kHeadSize / kProbeRows},
      {"probe_no_compute", scan_probe<true, false>, kProbeThreads, sizeof(ProbeSmem),
       kHeadSize / kProbeRows},
      {"columns_in_registers", scan_columns, kColThreads, 0, kHeadSize / kProbeRows},
      {"probe_rotated", scan_probe<true, true, true>, kProbeThreads, sizeof(ProbeSmem),
       kHeadSize / kProbeRows},
      {"probe_rotated_no_compute", scan_probe<true, false, true>, kProbeThreads,
       sizeof(ProbeSmem), kHeadSize / kProbeRows}};
  for (const Form& f : forms)
    if (f.bytes > 0)
      cudaFuncSetAttribute(f.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, f.bytes);
  const Form reference{"reference", scan_reference, kHeadSize, 0, kHeadSize};

  // Each full form against the reference on one (2 sequences, 8 groups) call, same inputs.
  const size_t state_floats = size_t{kMaxSeqs} * kVHeads * kStateFloats;
  std::vector<float> want(floats + state_floats), got(floats + state_floats);
  double worst[4] = {0, 0, 0, 0};
  const int checked[4] = {0, 1, 4, 5};
  for (int c = -1; c < 4; ++c) {
    cudaMemcpy(workspace, host.data(), floats * sizeof(float), cudaMemcpyHostToDevice);
    (c < 0 ? reference : forms[checked[c]]).launch(kMaxSeqs, kMaxGroups, workspace, state);
    std::vector<float>& to = c < 0 ? want : got;
    cudaMemcpy(to.data(), workspace, floats * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(to.data() + floats, state, state_floats * sizeof(float), cudaMemcpyDeviceToHost);
    if (!ok(cudaGetLastError(), "check")) return 1;
    if (c >= 0)
      for (size_t i = 0; i < want.size(); ++i) {
        const double d = want[i] > got[i] ? want[i] - got[i] : got[i] - want[i];
        worst[c] = d > worst[c] || d != d ? d : worst[c];
      }
  }
  cudaMemcpy(workspace, host.data(), floats * sizeof(float), cudaMemcpyHostToDevice);

  const int shapes[][2] = {{1, 2}, {1, 3}, {1, 5}, {1, 8}, {2, 2}, {2, 4}};
  std::printf("{\"what\": \"gdn prefill cp scan micro\", \"reps\": %d, \"unit\": \"us per launch\", "
              "\"folder\": \"%s\", \"worst_abs_diff_vs_reference\": {\"folder\": %.3g, \"probe_stream_compute\": "
              "%.3g, \"columns_in_registers\": %.3g, \"probe_rotated\": %.3g}, \"cases\": [",
              kReps, folder, worst[0], worst[1], worst[2], worst[3]);
  bool first = true;
  for (const Form& f : forms)
    for (const auto& sh : shapes) {
      const double us = time_scan(f, sh[0], sh[1], workspace, state);
      if (!ok(cudaGetLastError(), f.name)) return 1;
      std::printf("%s\n  {\"kernel\": \"%s\", \"seqs\": %d, \"groups\": %d, \"us\": %.3f}",
                  first ? "" : ",", f.name, sh[0], sh[1], us);
      first = false;
    }
  std::printf("\n]}\n");
  return 0;
}
