// The row-tile route: each CTA updates a tile of consecutive value rows of one (batch, head)
// state matrix, every row read once from HBM and written once, with no shared memory and no
// barrier. It is a streaming copy with a little arithmetic in the middle, so it is built like one:
// every load a thread needs is issued before the first use, 16-byte accesses, and enough CTAs that
// every SM has loads in flight.
//
// Per (b, h), with M = state[b, h] as [v][k] (k-last) and the reference's math:
//   g = exp(-exp(A_log[h]) * softplus(a + dt_bias[h])),  beta = sigmoid(b)
//   row_v <- g row_v + delta_v k,  delta_v = beta (v_v - g (row_v . k))
//   out_v = scale (row_v(new) . q) = scale (g (row_v . q) + delta_v (k . q))
// The last form lets both dot products of a row come from the row as loaded, so one reduction
// round serves both, and k . q is reduced once per warp. Rows are independent: the route needs no
// communication between warps, and a row read before it is written by the same thread makes the
// in-place update (new_state == state) safe.
//
// Lane layout: 8 lanes per row, so a warp works on 4 rows at a time (a "pass"). Lane j of a row
// holds the float4s j, j+8, j+16, j+24 of it: each load instruction of the warp reads 4 full
// 128-byte lines, and a row's dot products reduce over 8 lanes (3 shuffle steps).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "gdn_decode.cuh"
#include "resident_ctas.h"
#include "tuning.h"

namespace khk::gdn_decode {

constexpr int kWarpSize = 32;
constexpr int kLanesPerRow = 8;
constexpr int kRowsPerPass = kWarpSize / kLanesPerRow;          // rows a warp holds per pass
constexpr int kVecsPerLane = kHeadSize / 4 / kLanesPerRow;      // float4s of a row per lane

// A tile is 4 rows x warps x passes; a head's 128 value rows make this many tiles.
__host__ __device__ constexpr int tiles_per_head(int warps, int passes) {
  return kHeadSize / (kRowsPerPass * warps * passes);
}

template <CachePolicy P>
__device__ __forceinline__ float4 load_state(const float* p) {
  const float4* v = reinterpret_cast<const float4*>(p);
  if constexpr (P == CachePolicy::cs) return __ldcs(v);
  float4 r;
  if constexpr (P == CachePolicy::nc) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
                 : "l"(v));
    return r;
  }
  if constexpr (P == CachePolicy::ef) {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));  // CSE-able
    asm volatile(
        "ld.global.L1::no_allocate.L2::cache_hint.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
        : "l"(v), "l"(policy));
    return r;
  }
  return *v;
}

template <CachePolicy P>
__device__ __forceinline__ void store_state(float* p, float4 value) {
  float4* v = reinterpret_cast<float4*>(p);
  if constexpr (P == CachePolicy::cs) {
    __stcs(v, value);
  } else {
    *v = value;
  }
}

// Four consecutive bf16 (8 bytes, aligned) as floats.
__device__ __forceinline__ float4 load_bf16x4(const __nv_bfloat16* p) {
  const uint2 raw = __ldg(reinterpret_cast<const uint2*>(p));
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}

__device__ __forceinline__ float dot4(float4 a, float4 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}

// Sum over the 8 lanes of a row (lanes 8r .. 8r+7 of the warp).
__device__ __forceinline__ float row_sum(float x) {
#pragma unroll
  for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// The gates of one (b, h), in fp32 as the reference computes them: g = exp(-exp(A_log) *
// softplus(a + dt_bias)) with torch's softplus (linear above kSoftplusThreshold), beta =
// sigmoid(b). FAST_GATES takes the exponentials and the division from the SFU (about 1e-6
// relative in g while exp(A_log) * softplus stays below ~100, beyond which g underflows anyway)
// to shorten the chain between the first loads and the first stores. softplus keeps log1pf in
// both: log(1 + e^x) rounds 1 + e^x and loses e^x for x below about -16, which a large
// exp(A_log) turns into a wrong g.
constexpr float kSoftplusThreshold = 20.0f;

struct Gates {
  float g, beta;
};

__device__ __forceinline__ Gates compute_gates(float a, float b, float A_log, float dt_bias) {
  const float x = a + dt_bias;
  if constexpr (kFastGates) {
    const float softplus = x > kSoftplusThreshold ? x : log1pf(__expf(x));
    return {__expf(-__expf(A_log) * softplus), __fdividef(1.0f, 1.0f + __expf(-b))};
  } else {
    const float softplus = x > kSoftplusThreshold ? x : log1pf(expf(x));
    return {expf(-expf(A_log) * softplus), 1.0f / (1.0f + expf(-b))};
  }
}

// One tile: kWarps warps, each making kPasses passes over 4 rows.
template <int kWarps, int kPasses, bool kHasState>
__device__ __forceinline__ void update_tile(const DecodeArgs& args, int64_t tile_index) {
  constexpr int kTilesPerHead = tiles_per_head(kWarps, kPasses);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int64_t head = tile_index / kTilesPerHead;  // b * 8 + h
  const int tile = static_cast<int>(tile_index % kTilesPerHead);
  const int h = static_cast<int>(head % kVHeads);
  const int64_t batch = head / kVHeads;
  const int col = lane % kLanesPerRow;  // this lane's float4s: col, col + 8, col + 16, col + 24
  const int first_row = (tile * kWarps + warp) * kRowsPerPass * kPasses + lane / kLanesPerRow;

  // Every load first. The gate inputs lead: their math can run while the state arrives.
  const float a = __bfloat162float(args.a[head]), b = __bfloat162float(args.b[head]);
  const float A_log = __ldg(args.A_log + h), dt_bias = __ldg(args.dt_bias + h);
  const float* state = args.state + head * kStateFloats;
  float4 s[kPasses][kVecsPerLane];
#pragma unroll
  for (int p = 0; p < kPasses; ++p)
#pragma unroll
    for (int i = 0; i < kVecsPerLane; ++i)
      s[p][i] = kHasState ? load_state<kStateLoad>(state + (first_row + p * kRowsPerPass) *
                                                               kHeadSize +
                                                     (col + i * kLanesPerRow) * 4)
                          : make_float4(0.f, 0.f, 0.f, 0.f);
  const int64_t qk_head = batch * kQKHeads + h / kGvaRatio;
  float4 kk[kVecsPerLane], qq[kVecsPerLane];
#pragma unroll
  for (int i = 0; i < kVecsPerLane; ++i) {
    kk[i] = load_bf16x4(args.k + qk_head * kHeadSize + (col + i * kLanesPerRow) * 4);
    qq[i] = load_bf16x4(args.q + qk_head * kHeadSize + (col + i * kLanesPerRow) * 4);
  }
  float vv[kPasses];
#pragma unroll
  for (int p = 0; p < kPasses; ++p)
    vv[p] = __bfloat162float(args.v[head * kHeadSize + first_row + p * kRowsPerPass]);

  const Gates gates = compute_gates(a, b, A_log, dt_bias);
  float kq = 0.f;
#pragma unroll
  for (int i = 0; i < kVecsPerLane; ++i) kq += dot4(kk[i], qq[i]);
  kq = row_sum(kq);

  float* new_state = args.new_state + head * kStateFloats;
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    float sk = 0.f, sq = 0.f;
#pragma unroll
    for (int i = 0; i < kVecsPerLane; ++i) {
      sk += dot4(s[p][i], kk[i]);
      sq += dot4(s[p][i], qq[i]);
    }
    sk = row_sum(sk);
    sq = row_sum(sq);
    const float g = gates.g;
    const float delta = gates.beta * (vv[p] - g * sk);
    const int row = first_row + p * kRowsPerPass;
#pragma unroll
    for (int i = 0; i < kVecsPerLane; ++i) {
      float4 m = s[p][i];
      m.x = g * m.x + delta * kk[i].x;
      m.y = g * m.y + delta * kk[i].y;
      m.z = g * m.z + delta * kk[i].z;
      m.w = g * m.w + delta * kk[i].w;
      store_state<kStateStore>(new_state + row * kHeadSize + (col + i * kLanesPerRow) * 4, m);
    }
    if (col == 0)
      args.output[head * kHeadSize + row] = __float2bfloat16_rn(args.scale * (g * sq + delta * kq));
  }
}

// Tiles in order, tile t = (b * 8 + h) * tiles_per_head + tile within the head. A grid smaller
// than the tile count (at most WAVES x the CTAs the GPU holds at once) strides over them.
template <int kWarps, int kPasses, bool kHasState>
__global__ void __launch_bounds__(kWarpSize * kWarps)
    row_tiles_kernel(DecodeArgs args, int64_t tiles) {
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x)
    update_tile<kWarps, kPasses, kHasState>(args, t);
}

// The launch shape of one call: tiles of 4 x warps x passes rows.
struct RowTileShape {
  int warps;
  int passes;
};

template <int kWarps, int kPasses, bool kHasState>
cudaError_t launch_row_tiles(const DecodeArgs& args, cudaStream_t stream) {
  constexpr int kThreads = kWarpSize * kWarps;
  constexpr auto kernel = row_tiles_kernel<kWarps, kPasses, kHasState>;
  const int64_t tiles = args.batch * kVHeads * tiles_per_head(kWarps, kPasses);
  const int64_t resident = resident_ctas<kernel>(kThreads);
  const int64_t ctas = resident > 0 ? std::min(tiles, resident * kWavesPerLaunch) : tiles;
  kernel<<<static_cast<unsigned>(ctas), kThreads, 0, stream>>>(args, tiles);
  return cudaGetLastError();
}

template <int kWarps, int kPasses>
cudaError_t launch_row_tiles(const DecodeArgs& args, cudaStream_t stream) {
  return args.state ? launch_row_tiles<kWarps, kPasses, true>(args, stream)
                    : launch_row_tiles<kWarps, kPasses, false>(args, stream);
}

// The shapes the dispatch can choose: warps 1, 2, 4 ... up to kMaxWarpsPerCta with one pass,
// then kMaxWarpsPerCta warps with 2 ... kMaxPasses passes.
inline cudaError_t launch_row_tiles(const DecodeArgs& args, RowTileShape shape,
                                    cudaStream_t stream) {
  if (shape.passes == 1) {
    switch (shape.warps) {
      case 1: return launch_row_tiles<1, 1>(args, stream);
      case 2: return launch_row_tiles<kMaxWarpsPerCta >= 2 ? 2 : 1, 1>(args, stream);
      case 4: return launch_row_tiles<kMaxWarpsPerCta >= 4 ? 4 : 1, 1>(args, stream);
      default: return launch_row_tiles<kMaxWarpsPerCta, 1>(args, stream);
    }
  }
  if (shape.passes == 2)
    return launch_row_tiles<kMaxWarpsPerCta, kMaxPasses >= 2 ? 2 : 1>(args, stream);
  return launch_row_tiles<kMaxWarpsPerCta, kMaxPasses>(args, stream);
}

}  // namespace khk::gdn_decode
