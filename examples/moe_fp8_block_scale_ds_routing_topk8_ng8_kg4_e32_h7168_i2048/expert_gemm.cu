// The expert GEMMs of the example MoE candidate (see kernel.cu for the whole flow).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "moe.cuh"

namespace kh_moe_example {
namespace {

// Both GEMMs run on tensor cores (mma.sync m16n8k16: bf16 in, fp32 accumulate) and compute a
// 64-row tile (rows = positions in the expert's token list) with 8 warps laid out 2 (rows) x 4
// (columns), each warp 32 rows: two m16 tiles. The K loop stages 64 columns of A and W per step in
// shared memory as bf16 (converted on the way from fp8 / fp32), with the next step's global loads
// issued before the current step's MMAs. Every 128 columns (one scale block) the block's partial
// sums are scaled and added to the running accumulators.
//
// mma.sync m16n8k16 fragment layout (PTX ISA), g = lane / 4, q = lane % 4; each 32-bit register
// holds two consecutive-k bf16 values, the lower k in the low half:
//   A (16 x 16, row-major)             a0 = A[g][2q..]    a1 = A[g+8][2q..]
//                                      a2 = A[g][2q+8..]  a3 = A[g+8][2q+8..]
//   B (16 x 8, "col": stored W[n][k])  b0 = W[g][2q..]    b1 = W[g][2q+8..]
//   C (16 x 8, fp32)                   c0, c1 = C[g][2q], C[g][2q+1]
//                                      c2, c3 = C[g+8][2q], C[g+8][2q+1]
// Shared-memory rows are padded by 8 bf16 (row stride 36 words), which makes those fragment reads
// conflict-free: the 32 lanes hit banks (4g + q) mod 32.

__device__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ uint32_t smem_pair(const __nv_bfloat16 (*tile)[kSmemStride], int row, int k) {
  return *reinterpret_cast<const uint32_t*>(&tile[row][k]);
}

// 16 fp8 e4m3 values (one 16-byte load) -> 16 bf16 in shared memory. Exact: e4m3 -> half -> bf16.
__device__ void store_fp8x16(const uint4& raw, __nv_bfloat16* dst) {
  const __nv_fp8x2_storage_t* pairs = reinterpret_cast<const __nv_fp8x2_storage_t*>(&raw);
  __nv_bfloat162 out[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pairs[i], __NV_E4M3)));
    out[i] = __floats2bfloat162_rn(f.x, f.y);
  }
  reinterpret_cast<uint4*>(dst)[0] = reinterpret_cast<const uint4*>(out)[0];
  reinterpret_cast<uint4*>(dst)[1] = reinterpret_cast<const uint4*>(out)[1];
}

__device__ uint4 load16(const uint8_t* p) {
  return p ? *reinterpret_cast<const uint4*>(p) : make_uint4(0, 0, 0, 0);
}

// GEMM1 + SwiGLU for local expert le. The CTA's 128 W13 rows are intermediate columns
// [i0, i0 + 64) of X1 (rows i0..) and of X2 (rows 2048 + i0..), so each thread holds X1 and X2 of
// the same (row, column) in matching accumulators and applies SwiGLU in registers:
// C = SiLU(X2) * X1 (the gate is the SECOND half).
__global__ void __launch_bounds__(kGemmThreads) gemm1_swiglu_kernel(MoeGemmArgs args, int le) {
  const int count = args.buf.count[le];
  const int m0 = blockIdx.y * kTileM;
  if (m0 >= count) return;
  const int i0 = blockIdx.x * kGemm1TileI;
  const int64_t T = args.T;
  const int32_t* tokens = args.buf.list_token + le * T;

  __shared__ __align__(16) __nv_bfloat16 a_s[kTileM][kSmemStride];
  __shared__ __align__(16) __nv_bfloat16 w_s[2 * kGemm1TileI][kSmemStride];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = warp / 4, wn = warp % 4, g = lane / 4, q = lane % 4;

  // Staging: one 16-byte chunk of A and two of W per thread per K step.
  const int a_row = threadIdx.x / 4, a_chunk = threadIdx.x % 4;
  const uint8_t* a_src = m0 + a_row < count
                             ? args.hidden + tokens[m0 + a_row] * int64_t{kHidden} + a_chunk * 16
                             : nullptr;  // rows past the list are zeros
  const uint8_t* w_src[2];
  int w_row[2], w_chunk[2];
  for (int c = 0; c < 2; ++c) {
    const int id = threadIdx.x + c * kGemmThreads;
    w_row[c] = id / 4, w_chunk[c] = id % 4;
    const int n =
        w_row[c] < kGemm1TileI ? i0 + w_row[c] : kIntermediate + i0 + w_row[c] - kGemm1TileI;
    w_src[c] = args.w13 + (static_cast<int64_t>(le) * kGemm1Out + n) * kHidden + w_chunk[c] * 16;
  }
  uint4 a_reg, w_reg[2];
  auto load = [&](int step) {
    a_reg = load16(a_src ? a_src + step * kTileK : nullptr);
    for (int c = 0; c < 2; ++c) w_reg[c] = load16(w_src[c] + step * kTileK);
  };
  auto store = [&]() {
    store_fp8x16(a_reg, &a_s[a_row][a_chunk * 16]);
    for (int c = 0; c < 2; ++c) store_fp8x16(w_reg[c], &w_s[w_row[c]][w_chunk[c] * 16]);
  };

  // The tokens of this thread's accumulator rows (row wm*32 + mi*16 + g + 8*hi), for the
  // activation scales hidden_states_scale[kb, token] (stored transposed: [56, T]).
  int64_t row_token[2][2];
  for (int mi = 0; mi < 2; ++mi)
    for (int hi = 0; hi < 2; ++hi) {
      const int r = m0 + wm * 32 + mi * 16 + g + 8 * hi;
      row_token[mi][hi] = r < count ? tokens[r] : -1;
    }
  const float* w13_scale =
      args.w13_scale + static_cast<int64_t>(le) * (kGemm1Out / kBlock) * kHiddenBlocks;
  const int n_block = i0 / kBlock;  // X1's 128-row scale block; X2's is n_block + 16

  float acc[2][2][2][4] = {};  // [mi][X1 / X2][nj][c]
  float blk[2][2][2][4];
  float a_scale[2][2], w_scale[2];
  constexpr int kSteps = kHidden / kTileK;
  load(0);
  store();
  __syncthreads();
  for (int step = 0; step < kSteps; ++step) {
    if (step + 1 < kSteps) load(step + 1);
    if (step % kStepsPerBlock == 0) {  // a new scale block: fresh partial sums, fetch its scales
      const int kb = step / kStepsPerBlock;
      for (int mi = 0; mi < 2; ++mi)
        for (int hi = 0; hi < 2; ++hi)
          a_scale[mi][hi] =
              row_token[mi][hi] >= 0 ? args.hidden_scale[kb * T + row_token[mi][hi]] : 0.f;
      w_scale[0] = w13_scale[n_block * kHiddenBlocks + kb];
      w_scale[1] = w13_scale[(n_block + kIntermediate / kBlock) * kHiddenBlocks + kb];
      for (auto& x : blk)
        for (auto& y : x)
          for (auto& z : y)
            for (float& v : z) v = 0.f;
    }
#pragma unroll
    for (int k = 0; k < kTileK; k += 16) {
      uint32_t a[2][4];
      for (int mi = 0; mi < 2; ++mi) {
        const int r = wm * 32 + mi * 16 + g;
        a[mi][0] = smem_pair(a_s, r, k + 2 * q), a[mi][1] = smem_pair(a_s, r + 8, k + 2 * q);
        a[mi][2] = smem_pair(a_s, r, k + 2 * q + 8),
        a[mi][3] = smem_pair(a_s, r + 8, k + 2 * q + 8);
      }
      for (int half = 0; half < 2; ++half)
        for (int nj = 0; nj < 2; ++nj) {
          const int n = half * kGemm1TileI + wn * 16 + nj * 8 + g;
          const uint32_t b0 = smem_pair(w_s, n, k + 2 * q), b1 = smem_pair(w_s, n, k + 2 * q + 8);
          for (int mi = 0; mi < 2; ++mi) mma_bf16_16816(blk[mi][half][nj], a[mi], b0, b1);
        }
    }
    if (step % kStepsPerBlock == kStepsPerBlock - 1)  // end of the scale block: promote
      for (int mi = 0; mi < 2; ++mi)
        for (int half = 0; half < 2; ++half)
          for (int nj = 0; nj < 2; ++nj)
            for (int c = 0; c < 4; ++c)
              acc[mi][half][nj][c] += blk[mi][half][nj][c] * (a_scale[mi][c / 2] * w_scale[half]);
    __syncthreads();
    if (step + 1 < kSteps) {
      store();
      __syncthreads();
    }
  }

  for (int mi = 0; mi < 2; ++mi)
    for (int hi = 0; hi < 2; ++hi) {
      const int r = m0 + wm * 32 + mi * 16 + g + 8 * hi;
      if (r >= count) continue;
      for (int nj = 0; nj < 2; ++nj) {
        float out[2];
        for (int e = 0; e < 2; ++e) {
          const float x1 = acc[mi][0][nj][2 * hi + e], x2 = acc[mi][1][nj][2 * hi + e];
          out[e] = x2 / (1.0f + expf(-x2)) * x1;
        }
        const int col = i0 + wn * 16 + nj * 8 + 2 * q;
        *reinterpret_cast<float2*>(args.buf.swiglu + static_cast<int64_t>(r) * kIntermediate +
                                   col) = make_float2(out[0], out[1]);
      }
    }
}

// GEMM2 for local expert le: accum[token] += weight * C[row] . W2[le]^T over hidden columns
// [n0, n0 + 128), one W2 scale block, so the block scale is one number per K block.
__global__ void __launch_bounds__(kGemmThreads) gemm2_kernel(MoeGemmArgs args, int le) {
  const int count = args.buf.count[le];
  const int m0 = blockIdx.y * kTileM;
  if (m0 >= count) return;
  const int n0 = blockIdx.x * kGemm2TileN;
  const int64_t T = args.T;

  __shared__ __align__(16) __nv_bfloat16 a_s[kTileM][kSmemStride];
  __shared__ __align__(16) __nv_bfloat16 w_s[kGemm2TileN][kSmemStride];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = warp / 4, wn = warp % 4, g = lane / 4, q = lane % 4;

  // Staging: four float4 of C (rounded to bf16) and two 16-byte fp8 chunks of W2 per thread.
  const float* a_src[4];
  int a_row[4], a_col[4];
  for (int c = 0; c < 4; ++c) {
    const int id = threadIdx.x + c * kGemmThreads;
    a_row[c] = id / 16, a_col[c] = (id % 16) * 4;
    a_src[c] =
        m0 + a_row[c] < count
            ? args.buf.swiglu + static_cast<int64_t>(m0 + a_row[c]) * kIntermediate + a_col[c]
            : nullptr;
  }
  const uint8_t* w_src[2];
  int w_row[2], w_chunk[2];
  for (int c = 0; c < 2; ++c) {
    const int id = threadIdx.x + c * kGemmThreads;
    w_row[c] = id / 4, w_chunk[c] = id % 4;
    w_src[c] = args.w2 + (static_cast<int64_t>(le) * kHidden + n0 + w_row[c]) * kIntermediate +
               w_chunk[c] * 16;
  }
  float4 a_reg[4];
  uint4 w_reg[2];
  auto load = [&](int step) {
    for (int c = 0; c < 4; ++c)
      a_reg[c] = a_src[c] ? *reinterpret_cast<const float4*>(a_src[c] + step * kTileK)
                          : make_float4(0.f, 0.f, 0.f, 0.f);
    for (int c = 0; c < 2; ++c) w_reg[c] = load16(w_src[c] + step * kTileK);
  };
  auto store = [&]() {
    for (int c = 0; c < 4; ++c) {
      __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(a_reg[c].x, a_reg[c].y),
                                __floats2bfloat162_rn(a_reg[c].z, a_reg[c].w)};
      *reinterpret_cast<uint2*>(&a_s[a_row[c]][a_col[c]]) = *reinterpret_cast<const uint2*>(pair);
    }
    for (int c = 0; c < 2; ++c) store_fp8x16(w_reg[c], &w_s[w_row[c]][w_chunk[c] * 16]);
  };

  const float* w2_scale = args.w2_scale + (static_cast<int64_t>(le) * kHiddenBlocks + n0 / kBlock) *
                                              (kIntermediate / kBlock);
  float acc[2][4][4] = {};  // [mi][nj][c]
  float blk[2][4][4];
  float scale = 0.f;
  constexpr int kSteps = kIntermediate / kTileK;
  load(0);
  store();
  __syncthreads();
  for (int step = 0; step < kSteps; ++step) {
    if (step + 1 < kSteps) load(step + 1);
    if (step % kStepsPerBlock == 0) {
      scale = w2_scale[step / kStepsPerBlock];
      for (auto& x : blk)
        for (auto& y : x)
          for (float& v : y) v = 0.f;
    }
#pragma unroll
    for (int k = 0; k < kTileK; k += 16) {
      uint32_t a[2][4];
      for (int mi = 0; mi < 2; ++mi) {
        const int r = wm * 32 + mi * 16 + g;
        a[mi][0] = smem_pair(a_s, r, k + 2 * q), a[mi][1] = smem_pair(a_s, r + 8, k + 2 * q);
        a[mi][2] = smem_pair(a_s, r, k + 2 * q + 8),
        a[mi][3] = smem_pair(a_s, r + 8, k + 2 * q + 8);
      }
      for (int nj = 0; nj < 4; ++nj) {
        const int n = wn * 32 + nj * 8 + g;
        const uint32_t b0 = smem_pair(w_s, n, k + 2 * q), b1 = smem_pair(w_s, n, k + 2 * q + 8);
        for (int mi = 0; mi < 2; ++mi) mma_bf16_16816(blk[mi][nj], a[mi], b0, b1);
      }
    }
    if (step % kStepsPerBlock == kStepsPerBlock - 1)
      for (int mi = 0; mi < 2; ++mi)
        for (int nj = 0; nj < 4; ++nj)
          for (int c = 0; c < 4; ++c) acc[mi][nj][c] += blk[mi][nj][c] * scale;
    __syncthreads();
    if (step + 1 < kSteps) {
      store();
      __syncthreads();
    }
  }

  // Each token occurs at most once in this expert's list and experts run one launch after the
  // other, so these read-modify-writes never race and their order is fixed.
  for (int mi = 0; mi < 2; ++mi)
    for (int hi = 0; hi < 2; ++hi) {
      const int r = m0 + wm * 32 + mi * 16 + g + 8 * hi;
      if (r >= count) continue;
      const int64_t token = args.buf.list_token[le * T + r];
      const float weight = args.buf.list_weight[le * T + r];
      for (int nj = 0; nj < 4; ++nj) {
        float2* dst = reinterpret_cast<float2*>(args.buf.accum + token * kHidden + n0 + wn * 32 +
                                                nj * 8 + 2 * q);
        float2 v = *dst;
        v.x += weight * acc[mi][nj][2 * hi];
        v.y += weight * acc[mi][nj][2 * hi + 1];
        *dst = v;
      }
    }
}

}  // namespace

void launch_expert_gemms(const MoeGemmArgs& args, int le, unsigned row_tiles, cudaStream_t stream) {
  gemm1_swiglu_kernel<<<dim3(kIntermediate / kGemm1TileI, row_tiles), kGemmThreads, 0, stream>>>(
      args, le);
  gemm2_kernel<<<dim3(kHidden / kGemm2TileN, row_tiles), kGemmThreads, 0, stream>>>(args, le);
}

}  // namespace kh_moe_example
