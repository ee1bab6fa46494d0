// Micro-benchmark: the GDN prefill context-parallel scan step on wgmma, against the library's.
// The library's scan (small_chunk_scan.cuh) takes about 3.7 us a step on one H200 with mma.sync
// tf32 tiles (kernels/gdn_prefill/ROOFLINE.md: its warps wait on their own load-split-MMA chains),
// and that step sets both the context-parallel route's stagger and how short a group may be. This
// asks how short the step can be when the products are warpgroup MMAs: per (sequence, head) a
// cluster of 2 x kParts CTAs, each one warpgroup computing a 64-row by 128 / kParts-column block
// of E_{g+1} = E_g A_g + B_g as three tf32 products (E hi and lo from registers, the map's hi and
// lo from shared memory: ~2^-21 relative per term, as the library's split), the map's columns
// brought by one bulk copy per step from a layout the map pass would write (A_g transposed, in
// wgmma's no-swizzle core matrices), and the new rows exchanged through distributed shared
// memory, one cluster barrier per step. Checks both scans against an fp64 recurrence on the host;
// times each (mean over kReps back-to-back launches, the workspace in L2 as after the map pass)
// at 2, 4 and 8 groups for one and two sequences: the slope is the step. Prints one JSON object.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bulk_copy.cuh"  // bulk_copy_to_shared, barrier_*; mma_tiles.cuh: split_tf32_truncated
#include "cluster_exchange.cuh"
#include "micro_common.cuh"
#include "small_chunk_scan.cuh"

namespace {

using micro::ok;
using namespace khk::gdn_prefill;

constexpr int kReps = 200;
constexpr int kD = kHeadSize;        // 128
constexpr int kM = 64;               // value rows per CTA: one warpgroup's wgmma M
constexpr int kKSteps = kD / 8;      // tf32 wgmma K is 8
constexpr int kEStride = kD + 4;     // fragment loads conflict-free
constexpr int kThreads = 128;
// wgmma's no-swizzle K-major layout of a map's columns: core matrices of 8 columns x 4 keys (16
// bytes a row), the next 4 keys 128 bytes on (LBO), the next 8 columns 4096 bytes on (SBO).
constexpr uint32_t kLbo = 128, kSbo = 8 * kD * 4;
__host__ __device__ constexpr int wg_offset(int n, int k) {
  return (n / 8) * (kSbo / 4) + (k / 4) * (kLbo / 4) + (n % 8) * 4 + k % 4;
}

template <int kParts>
struct WgSmem {
  static constexpr int kN = kD / kParts;
  static constexpr int kStages = 2;
  float map[kStages][kN * kD];  // the CTA's columns of A_g, [n][k] in core matrices
  float lo[kStages][kN * kD];   // their tf32 remainders
  float e[2][kM][kEStride];     // the CTA's rows of E_g, then of E_{g+1}
  uint64_t full[kStages];
};

struct WgArgs {
  const float* e1;    // [head][v][k]: E_1
  const float* b;     // [head][step][v][n]: B_{step+1}
  const float* map;   // [head][step][wg_offset]: A_{step+1}
  const float* lo;    // same layout: A - its tf32 truncation
  float* out;         // [head][step][v][n]: E_{step+2} (the last is the new state)
  int groups;
};

__device__ __forceinline__ uint64_t wg_desc(const float* smem_at) {
  return static_cast<uint64_t>((smem_address(smem_at) & 0x3ffff) >> 4) |
         static_cast<uint64_t>(kLbo >> 4) << 16 | static_cast<uint64_t>(kSbo >> 4) << 32;
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

template <int kN>
struct Wg;
template <>
struct Wg<64> {
  static __device__ __forceinline__ void mma(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
        "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, "
        "%36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(1));
  }
};
template <>
struct Wg<32> {
  static __device__ __forceinline__ void mma(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(1));
  }
};

// One (sequence, head) per cluster of 2 x kParts CTAs: rank = row block x kParts + column part.
// kLoInGlobal: the map's remainders come from global memory (the map pass would write them) rather
// than computed here from the map each step.
template <int kParts, bool kLoInGlobal>
__global__ void __launch_bounds__(kThreads, 1) wg_scan(WgArgs p) {
  using Smem = WgSmem<kParts>;
  constexpr int kN = Smem::kN, kStages = Smem::kStages, kTiles = kN / 8;
  constexpr uint32_t kMapBytes = kN * kD * 4;
  extern __shared__ __align__(128) unsigned char smem[];
  Smem& s = *reinterpret_cast<Smem*>(smem);
  const int cluster = 2 * kParts, rank = static_cast<int>(blockIdx.x) % cluster;
  const int64_t head = blockIdx.x / cluster;
  const int rb = rank / kParts, part = rank % kParts;
  const int row0 = rb * kM, col0 = part * kN;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, c = lane % 4, r0 = 16 * warp + g;  // the thread's rows r0, r0 + 8
  const int steps = p.groups - 1;
  const auto request = [&](int m) {  // thread 0: map m into its stage
    uint64_t* full = &s.full[m % kStages];
    const int64_t at = (head * steps + m) * int64_t{kD * kD} + int64_t{col0} * kD;
    barrier_arrive_expect(full, kLoInGlobal ? 2 * kMapBytes : kMapBytes);
    bulk_copy_to_shared(s.map[m % kStages], p.map + at, kMapBytes, full);
    if (kLoInGlobal) bulk_copy_to_shared(s.lo[m % kStages], p.lo + at, kMapBytes, full);
  };
  if (tid == 0) {
    for (int st = 0; st < kStages; ++st) barrier_init(&s.full[st], 1);
    for (int m = 0; m < steps && m < kStages; ++m) request(m);
  }
  for (int u = tid; u < kM * kD / 4; u += kThreads) {  // E_1's rows
    const int row = u / (kD / 4), col = 4 * (u % (kD / 4));
    *reinterpret_cast<float4*>(&s.e[0][row][col]) =
        *reinterpret_cast<const float4*>(p.e1 + (head * kD + row0 + row) * kD + col);
  }
  cluster_sync();  // E_1 and the barriers' init seen; every CTA of the cluster running

  for (int step = 0; step < steps; ++step) {
    const int stage = step % kStages;
    float2 b[kTiles][2];
    const float* bsrc = p.b + (head * steps + step) * int64_t{kD * kD};
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        b[j][half] = *reinterpret_cast<const float2*>(
            bsrc + (row0 + r0 + 8 * half) * kD + col0 + 8 * j + 2 * c);
    barrier_wait(&s.full[stage], (step / kStages) & 1);
    if (!kLoInGlobal) {
      const float4* from = reinterpret_cast<const float4*>(s.map[stage]);
      float4* to = reinterpret_cast<float4*>(s.lo[stage]);
      for (int u = tid; u < kN * kD / 4; u += kThreads) {
        float4 x = from[u];
        x.x -= __uint_as_float(__float_as_uint(x.x) & 0xffffe000u);
        x.y -= __uint_as_float(__float_as_uint(x.y) & 0xffffe000u);
        x.z -= __uint_as_float(__float_as_uint(x.z) & 0xffffe000u);
        x.w -= __uint_as_float(__float_as_uint(x.w) & 0xffffe000u);
        to[u] = x;
      }
      fence_proxy_async();  // the generic stores, before the tensor cores read them
      __syncthreads();
    }
    const float(&e)[kM][kEStride] = s.e[step & 1];
    uint32_t ehi[kKSteps][4], elo[kKSteps][4];
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const int k = 8 * ks + c;
      split_tf32_truncated(e[r0][k], ehi[ks][0], elo[ks][0]);
      split_tf32_truncated(e[r0 + 8][k], ehi[ks][1], elo[ks][1]);
      split_tf32_truncated(e[r0][k + 4], ehi[ks][2], elo[ks][2]);
      split_tf32_truncated(e[r0 + 8][k + 4], ehi[ks][3], elo[ks][3]);
    }
    float acc[4 * kTiles];
#pragma unroll
    for (int i = 0; i < 4 * kTiles; ++i) acc[i] = 0.0f;
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {  // small terms first
      Wg<kN>::mma(acc, elo[ks], wg_desc(s.map[stage] + wg_offset(0, 8 * ks)));
      Wg<kN>::mma(acc, ehi[ks], wg_desc(s.lo[stage] + wg_offset(0, 8 * ks)));
    }
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)
      Wg<kN>::mma(acc, ehi[ks], wg_desc(s.map[stage] + wg_offset(0, 8 * ks)));
    wg_commit();
    wg_wait_all();
    __syncthreads();  // the stage's map and remainders read by every warp
    if (tid == 0 && step + kStages < steps) {
      fence_proxy_async();  // the remainders' generic reads and writes, before the copy's
      request(step + kStages);
    }
    const bool more = step + 1 < steps;
    float* out = p.out + (head * steps + step) * int64_t{kD * kD};
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float2 x = make_float2(acc[4 * j + 2 * half] + b[j][half].x,
                                     acc[4 * j + 2 * half + 1] + b[j][half].y);
        *reinterpret_cast<float2*>(out + (row0 + r0 + 8 * half) * kD + col0 + 8 * j + 2 * c) = x;
        if (more) {
          float* to = &s.e[(step + 1) & 1][r0 + 8 * half][col0 + 8 * j + 2 * c];
          for (int q = 0; q < kParts; ++q) store_to_cluster(to, rb * kParts + q, x);
        }
      }
    if (!more) break;
    cluster_sync();  // E_{g+1}'s rows whole in every CTA of the row block
  }
}

// The library's scan and this one on the same maps, from host arrays per head:
// e1 [v][k], b[step] [v][n], a[step] [k][n].
struct Problem {
  int heads, groups;
  std::vector<float> e1, b, a;
  int steps() const { return groups - 1; }
};

Problem make_problem(int heads, int groups, unsigned seed) {
  Problem p{heads, groups, {}, {}, {}};
  const size_t mat = size_t{kD} * kD;
  p.e1.resize(heads * mat);
  p.b.resize(heads * p.steps() * mat);
  p.a.resize(heads * p.steps() * mat);
  unsigned x = seed;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  };
  for (auto& v : p.e1) v = next();
  for (auto& v : p.b) v = next();
  for (auto& v : p.a) v = next() * 0.15f;  // about 1 / sqrt(128) a term: products stay bounded
  return p;
}

// The fp64 recurrence: E_2 .. E_G per head, [head][step][v][n].
std::vector<double> reference(const Problem& p) {
  const size_t mat = size_t{kD} * kD;
  std::vector<double> out(p.heads * p.steps() * mat), e(mat), next(mat);
  for (int h = 0; h < p.heads; ++h) {
    for (size_t i = 0; i < mat; ++i) e[i] = p.e1[h * mat + i];
    for (int st = 0; st < p.steps(); ++st) {
      const float* a = &p.a[(size_t(h) * p.steps() + st) * mat];
      const float* b = &p.b[(size_t(h) * p.steps() + st) * mat];
      for (int v = 0; v < kD; ++v)
        for (int n = 0; n < kD; ++n) {
          double sum = b[v * kD + n];
          for (int k = 0; k < kD; ++k) sum += e[v * kD + k] * a[k * kD + n];
          next[v * kD + n] = sum;
        }
      e.swap(next);
      for (size_t i = 0; i < mat; ++i) out[(size_t(h) * p.steps() + st) * mat + i] = e[i];
    }
  }
  return out;
}

struct Device {
  float *e1 = nullptr, *b = nullptr, *map = nullptr, *lo = nullptr, *out = nullptr;
  float *workspace = nullptr, *state = nullptr;
  size_t ws_floats = 0;
};

// Uploads the problem in both layouts: this scan's (maps transposed into core matrices, their
// remainders beside) and the library's workspace (E_1 and the B_g as exits, the A_g as maps).
bool upload(const Problem& p, int num_seqs, Device& d) {
  const size_t mat = size_t{kD} * kD;
  std::vector<float> map(p.a.size()), lo(p.a.size());
  for (size_t m = 0; m < p.a.size() / mat; ++m)
    for (int k = 0; k < kD; ++k)
      for (int n = 0; n < kD; ++n) {
        const float v = p.a[m * mat + k * kD + n];
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        bits &= 0xffffe000u;
        float hi;
        std::memcpy(&hi, &bits, 4);
        map[m * mat + wg_offset(n, k)] = v;
        lo[m * mat + wg_offset(n, k)] = v - hi;
      }
  const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
  std::vector<float> ws(SmallGroupSpace::floats(num_seqs, p.groups, 0), 0.0f);
  for (int h = 0; h < p.heads; ++h) {
    std::memcpy(&ws[space.exit(h, 0) - d.workspace], &p.e1[h * mat], mat * 4);
    for (int st = 0; st < p.steps(); ++st) {
      std::memcpy(&ws[space.exit(h, st + 1) - d.workspace], &p.b[(h * p.steps() + st) * mat],
                  mat * 4);
      std::memcpy(&ws[space.map(h, st) - d.workspace], &p.a[(h * p.steps() + st) * mat], mat * 4);
    }
    for (int w = 0; w < 2 * p.groups - 1; ++w) {  // every walk done
      const int one = 1;
      std::memcpy(&ws[reinterpret_cast<float*>(space.walk_done(h, w)) - d.workspace], &one, 4);
    }
  }
  return ok(cudaMemcpy(d.e1, p.e1.data(), p.e1.size() * 4, cudaMemcpyHostToDevice), "e1") &&
         ok(cudaMemcpy(d.b, p.b.data(), p.b.size() * 4, cudaMemcpyHostToDevice), "b") &&
         ok(cudaMemcpy(d.map, map.data(), map.size() * 4, cudaMemcpyHostToDevice), "map") &&
         ok(cudaMemcpy(d.lo, lo.data(), lo.size() * 4, cudaMemcpyHostToDevice), "lo") &&
         ok(cudaMemcpy(d.workspace, ws.data(), ws.size() * 4, cudaMemcpyHostToDevice), "ws");
}

struct Form {
  const char* name;
  int parts;       // 0: the library's scan
  bool lo_global;
  bool launch(const Problem& p, int num_seqs, const Device& d) const {
    if (parts == 0) {
      const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
      small_cp_scan_kernel<<<static_cast<unsigned>(p.heads * kScanCtasPerHead),
                             kScanThreadsPerCta, sizeof(SmallScanSmem)>>>(space, d.state);
      return true;
    }
    const WgArgs args{d.e1, d.b, d.map, d.lo, d.out, p.groups};
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2 * parts;
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(p.heads * 2 * parts));
    cfg.blockDim = dim3(kThreads);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (parts == 2) {
      cfg.dynamicSmemBytes = sizeof(WgSmem<2>);
      return ok(lo_global ? cudaLaunchKernelEx(&cfg, wg_scan<2, true>, args)
                          : cudaLaunchKernelEx(&cfg, wg_scan<2, false>, args), name);
    }
    cfg.dynamicSmemBytes = sizeof(WgSmem<4>);
    return ok(lo_global ? cudaLaunchKernelEx(&cfg, wg_scan<4, true>, args)
                        : cudaLaunchKernelEx(&cfg, wg_scan<4, false>, args), name);
  }
};

// Worst |got - want| over E_2 .. E_G, relative to the largest |want|.
double check(const Form& f, const Problem& p, int num_seqs, Device& d) {
  const size_t mat = size_t{kD} * kD;
  if (!upload(p, num_seqs, d) || !f.launch(p, num_seqs, d) ||
      !ok(cudaDeviceSynchronize(), f.name))
    return -1.0;
  const std::vector<double> want = reference(p);
  std::vector<float> got(want.size());
  if (f.parts > 0) {
    cudaMemcpy(got.data(), d.out, got.size() * 4, cudaMemcpyDeviceToHost);
  } else {  // E_2 .. E_{G-1} over the B_g in the workspace, E_G in the state
    const SmallGroupSpace space{d.workspace, p.groups, num_seqs, 0};
    for (int h = 0; h < p.heads; ++h)
      for (int st = 0; st < p.steps(); ++st) {
        const float* from = st + 1 < p.steps() ? space.exit(h, st + 1) : d.state + h * mat;
        cudaMemcpy(&got[(h * p.steps() + st) * mat], from, mat * 4, cudaMemcpyDeviceToHost);
      }
  }
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = std::fmax(scale, std::fabs(want[i]));
    const double diff = std::fabs(want[i] - got[i]);
    worst = diff > worst || diff != diff ? diff : worst;
  }
  return worst / scale;
}

double time_form(const Form& f, const Problem& p, int num_seqs, const Device& d) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  f.launch(p, num_seqs, d);
  cudaEventRecord(start);
  for (int i = 0; i < kReps; ++i) f.launch(p, num_seqs, d);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1000.0 * ms / kReps;
}

}  // namespace

int main() {
  constexpr int kMaxSeqs = 2, kMaxGroups = 8;
  const size_t mat = size_t{kD} * kD, heads = size_t{kMaxSeqs} * kVHeads;
  Device d;
  d.ws_floats = SmallGroupSpace::floats(kMaxSeqs, kMaxGroups, 0);
  const size_t per_step = heads * (kMaxGroups - 1) * mat * 4;
  if (!ok(cudaMalloc(&d.e1, heads * mat * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&d.b, per_step), "cudaMalloc") ||
      !ok(cudaMalloc(&d.map, per_step), "cudaMalloc") ||
      !ok(cudaMalloc(&d.lo, per_step), "cudaMalloc") ||
      !ok(cudaMalloc(&d.out, per_step), "cudaMalloc") ||
      !ok(cudaMalloc(&d.workspace, d.ws_floats * 4), "cudaMalloc") ||
      !ok(cudaMalloc(&d.state, heads * mat * 4), "cudaMalloc"))
    return 1;
  cudaFuncSetAttribute(small_cp_scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       sizeof(SmallScanSmem));
  cudaFuncSetAttribute(wg_scan<2, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       sizeof(WgSmem<2>));
  cudaFuncSetAttribute(wg_scan<2, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       sizeof(WgSmem<2>));
  cudaFuncSetAttribute(wg_scan<4, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       sizeof(WgSmem<4>));
  cudaFuncSetAttribute(wg_scan<4, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       sizeof(WgSmem<4>));
  const Form forms[] = {{"library_mma_sync", 0, false},
                        {"wgmma_cluster4", 2, false},
                        {"wgmma_cluster4_lo_global", 2, true},
                        {"wgmma_cluster8", 4, false},
                        {"wgmma_cluster8_lo_global", 4, true}};
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("{\"what\": \"GDN prefill context-parallel scan: library (mma.sync) vs wgmma forms\", "
              "\"gpu\": \"%s\", \"reps\": %d, \"unit\": \"us per launch (mean of back-to-back "
              "launches)\",\n \"worst_relative_error_vs_fp64\": {",
              prop.name, kReps);
  const Problem checked = make_problem(kMaxSeqs * kVHeads, kMaxGroups, 7u);
  bool fine = true;
  for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); ++i) {
    const double err = check(forms[i], checked, kMaxSeqs, d);
    fine = fine && err >= 0.0 && err < 1e-5;
    std::printf("%s\"%s\": %.3g", i ? ", " : "", forms[i].name, err);
  }
  std::printf("},\n \"cases\": [");
  const int shapes[][2] = {{1, 2}, {1, 4}, {1, 8}, {2, 2}, {2, 4}, {2, 8}};
  bool first = true;
  for (const auto& sh : shapes) {
    const Problem p = make_problem(sh[0] * kVHeads, sh[1], 11u);
    if (!upload(p, sh[0], d)) return 1;
    for (const Form& f : forms) {
      const double us = time_form(f, p, sh[0], d);
      if (!ok(cudaDeviceSynchronize(), f.name)) return 1;
      std::printf("%s\n  {\"form\": \"%s\", \"seqs\": %d, \"groups\": %d, \"us\": %.3f}",
                  first ? "" : ",", f.name, sh[0], sh[1], us);
      first = false;
    }
  }
  std::printf("\n]}\n");
  return fine ? 0 : 2;
}
