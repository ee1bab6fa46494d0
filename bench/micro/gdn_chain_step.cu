// Micro-benchmark: what one GDN prefill chain step costs on its own, per token, with its operands
// already in shared memory and no producer to wait for. The question (kernels/gdn_prefill/
// ROOFLINE.md, "What is left"): the context-parallel map pass's wide CTA (8 chain warps, two per
// SM sub-partition) takes ~1.9 us per 16-token step on an H100, the narrow one ~0.9 us; at ~7
// tensor-core MMAs per token and 16 value rows in either form, is that the chain's own
// instructions, or the pipeline around it (producers, barriers)? And would a chain of 64-token
// steps from precomputed operands (the split route's record: -W, Tu, P, the decays; fla's
// chunk_delta_h) issue fewer instructions per token? Three kernels, one CTA per SM, 4 or 8 chain
// warps (one or two per sub-partition), each warp 16 value rows of fp32 state in registers:
//   chunk16  the library's step (small_chunk_chain.cuh, small_chain_chunk with fp32 outputs as the
//            map pass writes them): D, Dq, Delta, the outputs, the update, per 16 tokens (since
//            2026-12-06 with the state held scaled, SMALL_SCALED_STATE; the results file of that
//            date measured the step before, which the variant with both costs kept reproduces);
//   chunk64  a 64-token step: U^T = V^T Tu^T, Vn^T = U^T - M W^T and O^T = M Q^T over the 128
//            keys (M split hi + lo once), O^T diag(scale gamma) + Vn^T P^T, the outputs stored,
//            M = gamma_last M + (Vn^T diag(fac)) K; Vn split twice (plain, scaled);
//   chunk16 variants: the step before the scaled state, as a copy, with the state's decay or Dq's
//            lo products left out;
//   peak     independent MMAs in eight accumulators: the tensor pipe's rate per warp.
// The operands are fixed patterns (the time of an MMA does not depend on its values); a compiler
// barrier at each step keeps every shared-memory read inside the step, as the real pipeline's
// mbarrier waits do. Prints one JSON object: median over the CTAs of ns and SM cycles per step
// and per 16 tokens.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "micro_common.cuh"
#include "small_chunk_chain.cuh"

namespace {

using micro::now_ns;
using micro::ok;
using namespace khk::gdn_prefill;

constexpr int kTokens = 4096;  // per warp and run: 256 steps of 16, 64 of 64
constexpr int kOutRing = 4;    // output slots per CTA (stores stay in L2)
constexpr int kLong = 64;      // tokens per chunk64 step
constexpr int kStride = kHeadSize + 8;

struct Chunk64Operands {
  __nv_bfloat16 w[kLong][kStride];  // -W, [token][key]
  __nv_bfloat16 q[kLong][kStride];
  __nv_bfloat16 k[kLong][kStride];
  __nv_bfloat16 v[kLong][kStride];  // [token][value row]
  uint4 tu[4][8][32];               // Tu^T's B fragments [16-token k-step][8-token n-tile][lane]
  uint4 p[4][8][32];                // scale P'^T's, the same way
  float sgamma[kLong], fac[kLong];
  float gamma_last;
};

__device__ __forceinline__ float pattern(int i) { return 0.01f * static_cast<float>(i % 17 - 8); }

__device__ __forceinline__ uint32_t pattern_pair(int i) {
  return pack_bf16x2(pattern(i), pattern(i + 5));
}

template <typename T>
__device__ void fill_bf16(T& rows, int count) {
  __nv_bfloat16* p = &rows[0][0];
  for (int i = static_cast<int>(threadIdx.x); i < count; i += blockDim.x)
    p[i] = __float2bfloat16_rn(pattern(i));
}

__device__ void fill_pairs(uint4* p, int count) {
  for (int i = static_cast<int>(threadIdx.x); i < count; i += blockDim.x)
    p[i] = make_uint4(pattern_pair(i), pattern_pair(i + 1), pattern_pair(i + 2),
                      pattern_pair(i + 3));
}

__device__ void initial_rows(float (&m)[16][4], int lane) {
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) m[j][e] = pattern(lane + 7 * j + e);
}

// Thread 0's span (ns and SM cycles) between two CTA barriers around the steps.
struct Span {
  unsigned long long ns, cycles;
};

__device__ __forceinline__ Span span_start() {
  __syncthreads();
  return {now_ns(), static_cast<unsigned long long>(clock64())};
}

__device__ __forceinline__ void span_end(Span s, unsigned long long* out) {
  __syncthreads();
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = now_ns() - s.ns;
    out[2 * blockIdx.x + 1] = static_cast<unsigned long long>(clock64()) - s.cycles;
  }
}


// The library's step as it was before the scaled state, with two of its costs removable, to price
// them: kDecay = false drops the state's per-chunk decay (64 FMULs per lane, which the scaled state
// folds into the per-token factors), kDqLo = false drops Dq's lo products (16 of the 112 MMAs; the
// output path at bf16 precision, which the route does not allow under `extreme` inputs).
template <bool kDecay, bool kDqLo>
__device__ __forceinline__ void chunk16_variant_step(float (&m)[16][4], const SmallTiles& tiles,
                                                     const SmallOperands& op, int warp_row0,
                                                     float* out, int lane) {
  const int c = lane % 4, mi = lane / 8, r = lane % 8;
  float dk[2][2][4] = {}, dq[2][2][4] = {};
#pragma unroll
  for (int s = 0; s < kHeadSize / 16; ++s) {
    uint32_t hi[4], lo[4], kb[4], qb[4];
    split_a_truncated(m[2 * s], m[2 * s + 1], hi, lo);
    ldmatrix_x4(kb, &tiles.k[(mi / 2) * 8 + r][16 * s + (mi % 2) * 8]);
    ldmatrix_x4(qb, &tiles.q[(mi / 2) * 8 + r][16 * s + (mi % 2) * 8]);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      mma_bf16(dk[0][nt], hi, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dk[1][nt], lo, kb[2 * nt], kb[2 * nt + 1]);
      mma_bf16(dq[0][nt], hi, qb[2 * nt], qb[2 * nt + 1]);
      if constexpr (kDqLo) mma_bf16(dq[1][nt], lo, qb[2 * nt], qb[2 * nt + 1]);
    }
  }
  float d[2][4], delta[2][4];
  add_tiles(dk[0][0], dk[1][0], d[0]);
  add_tiles(dk[0][1], dk[1][1], d[1]);
  small_delta<false>(tiles, op, d, warp_row0, delta, lane);
  uint32_t dhi[4], dlo[4];
  split_a_truncated(delta[0], delta[1], dhi, dlo);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    float o[4];
    add_tiles(dq[0][nt], dq[1][nt], o);
    small_output_tile<float, false>(o, dhi, dlo, op, nt, warp_row0, kSmallChunk, out, lane);
  }
  uint32_t whi[4], wlo[4];
  split_a_truncated(delta[0], delta[1], whi, wlo, op.w[2 * c], op.w[2 * c + 1], op.w[8 + 2 * c],
                    op.w[9 + 2 * c]);
#pragma unroll
  for (int j2 = 0; j2 < 8; ++j2) {
    uint32_t kb[4];
    ldmatrix_x4_trans(kb, &tiles.k[(mi % 2) * 8 + r][8 * (2 * j2 + mi / 2)]);
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      if constexpr (kDecay)
#pragma unroll
        for (int e = 0; e < 4; ++e) m[2 * j2 + jj][e] *= op.gamma_last;
      mma_bf16(m[2 * j2 + jj], whi, kb[2 * jj], kb[2 * jj + 1]);
      mma_bf16(m[2 * j2 + jj], wlo, kb[2 * jj], kb[2 * jj + 1]);
    }
  }
}

template <int kWarps, int kVariant = -1>
__global__ void __launch_bounds__(32 * kWarps, 1) chunk16(float* out, unsigned long long* spans) {
  __shared__ SmallTiles tiles;
  __shared__ SmallOperands op;
  fill_bf16(tiles.k, kSmallChunk * kSmallKStride);
  fill_bf16(tiles.q, kSmallChunk * kSmallKStride);
  fill_bf16(tiles.v, kSmallChunk * kSmallKStride);
  fill_pairs(&op.x[0][0], 64);
  fill_pairs(&op.p[0][0], 64);
  if (threadIdx.x < kSmallChunk) {
    const float g = exp2f(-0.05f * (threadIdx.x + 1));
    op.gamma[threadIdx.x] = g, op.sgamma[threadIdx.x] = 0.088f * g;
    op.w[threadIdx.x] = exp2f(-0.05f * (kSmallChunk - 1 - threadIdx.x));
  }
  if (threadIdx.x == 0) op.gamma_last = exp2f(-0.05f * kSmallChunk);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float m[16][4], scale = 1.0f;
  initial_rows(m, lane);
  float* slots = out + static_cast<size_t>(blockIdx.x) * kOutRing * kSmallChunk * kVHeads * kHeadSize;
  const Span s = span_start();
  for (int c = 0; c < kTokens / kSmallChunk; ++c) {
    asm volatile("" ::: "memory");
    float* o = slots + (c % kOutRing) * kSmallChunk * kVHeads * kHeadSize;
    if constexpr (kVariant < 0)
      small_chain_chunk<true, float>(m, scale, tiles, op, 16 * warp, kSmallChunk, o, lane);
    else
      chunk16_variant_step<(kVariant & 1) != 0, (kVariant & 2) != 0>(m, tiles, op, 16 * warp, o,
                                                                      lane);
  }
  span_end(s, spans);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 16; ++j) sum += m[j][0] + m[j][3];
  if (sum == 12345.0f) out[threadIdx.x] = sum;  // keeps the state alive
}

template <int kWarps>
__global__ void __launch_bounds__(32 * kWarps, 1) chunk64(float* out, unsigned long long* spans) {
  extern __shared__ __align__(16) unsigned char smem[];
  Chunk64Operands& s = *reinterpret_cast<Chunk64Operands*>(smem);
  fill_bf16(s.w, kLong * kStride);
  fill_bf16(s.q, kLong * kStride);
  fill_bf16(s.k, kLong * kStride);
  fill_bf16(s.v, kLong * kStride);
  fill_pairs(&s.tu[0][0][0], 4 * 8 * 32);
  fill_pairs(&s.p[0][0][0], 4 * 8 * 32);
  if (threadIdx.x < kLong) {
    s.sgamma[threadIdx.x] = 0.088f * exp2f(-0.02f * (threadIdx.x + 1));
    s.fac[threadIdx.x] = exp2f(-0.02f * (kLong - 1 - threadIdx.x));
  }
  if (threadIdx.x == 0) s.gamma_last = exp2f(-0.02f * kLong);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4, mi = lane / 8, r = lane % 8, row0 = 16 * warp;
  float m[16][4];
  initial_rows(m, lane);
  float* slots = out + static_cast<size_t>(blockIdx.x) * kOutRing * kLong * kVHeads * kHeadSize;
  const Span span = span_start();
  for (int step = 0; step < kTokens / kLong; ++step) {
    asm volatile("" ::: "memory");
    // U^T = V^T Tu^T (lower triangular in the tokens: n-tiles from 2 ks).
    float vn[8][4] = {};
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      uint32_t va[4];
      ldmatrix_x4_trans(va, &s.v[16 * ks + (mi / 2) * 8 + r][row0 + (mi % 2) * 8]);
#pragma unroll
      for (int nt = 2 * ks; nt < 8; ++nt) {
        const uint4 b = s.tu[ks][nt][lane];
        mma_bf16(vn[nt], va, b.x, b.y);
        mma_bf16(vn[nt], va, b.z, b.w);
      }
    }
    // Vn^T += M (-W)^T, O^T = M Q^T: M split once per 16 keys.
    float o[8][4] = {};
#pragma unroll
    for (int ks = 0; ks < kHeadSize / 16; ++ks) {
      uint32_t hi[4], lo[4];
      split_a_truncated(m[2 * ks], m[2 * ks + 1], hi, lo);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t wb[4], qb[4];
        ldmatrix_x4(wb, &s.w[16 * np + (mi / 2) * 8 + r][16 * ks + (mi % 2) * 8]);
        ldmatrix_x4(qb, &s.q[16 * np + (mi / 2) * 8 + r][16 * ks + (mi % 2) * 8]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          mma_bf16(vn[2 * np + h], hi, wb[2 * h], wb[2 * h + 1]);
          mma_bf16(vn[2 * np + h], lo, wb[2 * h], wb[2 * h + 1]);
          mma_bf16(o[2 * np + h], hi, qb[2 * h], qb[2 * h + 1]);
          mma_bf16(o[2 * np + h], lo, qb[2 * h], qb[2 * h + 1]);
        }
      }
    }
    // O^T = O^T diag(scale gamma) + Vn^T P^T; Vn split plain (outputs) and scaled (update).
    uint32_t uhi[4][4], ulo[4][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] *= s.sgamma[8 * nt + 2 * c + e % 2];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      uint32_t vhi[4], vlo[4];
      split_a_truncated(vn[2 * ks], vn[2 * ks + 1], vhi, vlo);
      const int t = 16 * ks + 2 * c;
      split_a_truncated(vn[2 * ks], vn[2 * ks + 1], uhi[ks], ulo[ks], s.fac[t], s.fac[t + 1],
                        s.fac[t + 8], s.fac[t + 9]);
#pragma unroll
      for (int nt = 2 * ks; nt < 8; ++nt) {
        const uint4 b = s.p[ks][nt][lane];
        mma_bf16(o[nt], vhi, b.x, b.y);
        mma_bf16(o[nt], vhi, b.z, b.w);
        mma_bf16(o[nt], vlo, b.x, b.y);
      }
    }
    float* at = slots + (step % kOutRing) * kLong * kVHeads * kHeadSize;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        at[(8 * nt + 2 * c + e % 2) * kVHeads * kHeadSize + row0 + g + 8 * (e / 2)] = o[nt][e];
    // M = gamma_last M + (Vn^T diag(fac)) K.
    const float decay = s.gamma_last;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) m[j][e] *= decay;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int j2 = 0; j2 < 8; ++j2) {
        uint32_t kb[4];
        ldmatrix_x4_trans(kb, &s.k[16 * ks + (mi % 2) * 8 + r][8 * (2 * j2 + mi / 2)]);
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          mma_bf16(m[2 * j2 + jj], uhi[ks], kb[2 * jj], kb[2 * jj + 1]);
          mma_bf16(m[2 * j2 + jj], ulo[ks], kb[2 * jj], kb[2 * jj + 1]);
        }
      }
  }
  span_end(span, spans);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 16; ++j) sum += m[j][0] + m[j][3];
  if (sum == 12345.0f) out[threadIdx.x] = sum;
}

constexpr int kPeakMmas = 4096;  // per warp

template <int kWarps>
__global__ void __launch_bounds__(32 * kWarps, 1) peak(float* out, unsigned long long* spans) {
  const int lane = threadIdx.x % 32;
  float acc[8][4] = {};
  const uint32_t a[4] = {pattern_pair(lane), pattern_pair(lane + 1), pattern_pair(lane + 2),
                         pattern_pair(lane + 3)};
  const uint32_t b0 = pattern_pair(lane + 4), b1 = pattern_pair(lane + 6);
  const Span s = span_start();
  for (int i = 0; i < kPeakMmas / 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) mma_bf16(acc[j], a, b0, b1);
  span_end(s, spans);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) sum += acc[j][0];
  if (sum == 12345.0f) out[threadIdx.x] = sum;
}

using Kernel = void (*)(float*, unsigned long long*);

struct Case {
  const char* name;
  Kernel kernel;
  int warps, smem, steps, tokens_per_step;
};

}  // namespace

int main() {
  int sms = 0, clock_khz = 0;
  cudaDeviceProp prop{};
  if (!ok(cudaGetDeviceProperties(&prop, 0), "properties")) return 1;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const int smem64 = static_cast<int>(sizeof(Chunk64Operands));
  for (Kernel k : {chunk64<4>, chunk64<8>})
    if (!ok(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem64),
            "smem attribute"))
      return 1;
  const Case cases[] = {
      {"peak, 4 warps", peak<4>, 4, 0, kPeakMmas, 0},
      {"peak, 8 warps", peak<8>, 8, 0, kPeakMmas, 0},
      {"chunk16, 4 warps", chunk16<4>, 4, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16, 8 warps", chunk16<8>, 8, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16 as a copy, 8 warps", chunk16<8, 3>, 8, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16 without the decay, 8 warps", chunk16<8, 2>, 8, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16 without Dq's lo, 8 warps", chunk16<8, 1>, 8, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16 without either, 8 warps", chunk16<8, 0>, 8, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk16 without the decay, 4 warps", chunk16<4, 2>, 4, 0, kTokens / kSmallChunk, kSmallChunk},
      {"chunk64, 4 warps", chunk64<4>, 4, smem64, kTokens / kLong, kLong},
      {"chunk64, 8 warps", chunk64<8>, 8, smem64, kTokens / kLong, kLong},
  };
  float* out = nullptr;
  unsigned long long* spans = nullptr;
  const size_t out_floats = static_cast<size_t>(sms) * kOutRing * kLong * kVHeads * kHeadSize;
  if (!ok(cudaMalloc(&out, out_floats * sizeof(float)), "malloc") ||
      !ok(cudaMalloc(&spans, 2 * sms * sizeof(unsigned long long)), "malloc"))
    return 1;
  std::printf("{\"gpu\": \"%s\", \"sms\": %d, \"max_clock_mhz\": %d, \"cases\": [", prop.name, sms,
              clock_khz / 1000);
  bool first = true;
  for (const Case& c : cases) {
    std::vector<double> ns, cycles;
    for (int rep = 0; rep < 5; ++rep) {
      c.kernel<<<sms, 32 * c.warps, c.smem>>>(out, spans);
      if (!ok(cudaDeviceSynchronize(), c.name)) return 1;
      std::vector<unsigned long long> host(2 * sms);
      cudaMemcpy(host.data(), spans, host.size() * sizeof(host[0]), cudaMemcpyDeviceToHost);
      if (rep == 0) continue;  // warm-up
      for (int b = 0; b < sms; ++b) ns.push_back(static_cast<double>(host[2 * b])),
                                   cycles.push_back(static_cast<double>(host[2 * b + 1]));
    }
    const double step_ns = micro::median(ns) / c.steps, step_cycles = micro::median(cycles) / c.steps;
    std::printf("%s\n {\"case\": \"%s\", \"warps\": %d, \"ns_per_step\": %.2f, "
                "\"cycles_per_step\": %.1f",
                first ? "" : ",", c.name, c.warps, step_ns, step_cycles);
    if (c.tokens_per_step)
      std::printf(", \"tokens_per_step\": %d, \"ns_per_16_tokens\": %.1f", c.tokens_per_step,
                  step_ns * 16 / c.tokens_per_step);
    else
      std::printf(", \"cycles_per_mma_per_subpartition\": %.2f", step_cycles / (c.warps / 4.0));
    std::printf("}");
    first = false;
  }
  std::printf("\n]}\n");
  return 0;
}
