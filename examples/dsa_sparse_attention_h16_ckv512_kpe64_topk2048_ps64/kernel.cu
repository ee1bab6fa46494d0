// A straightforward CUDA implementation of dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64:
// DeepSeek-V3.2 sparse MLA attention over each token's 2048 selected cache rows. Written for
// clarity: one CTA per (token, head); each warp walks a strided subset of the token's indices with
// its own online softmax, and the warps' partial results are merged at the end.
//
// Math (the definition's reference), per token t and head h, over the rows r of sparse_indices[t]
// that are not -1 (a -1 anywhere is padding; duplicates count twice):
//   logit_r = sm_scale * (q_nope[t,h] . ckv[r] + q_pe[t,h] . kpe[r])        (fp32)
//   output[t,h] = sum_r softmax(logit)_r * ckv[r]    (ckv is both key and value)   -> bf16
//   lse[t,h] = log2(sum_r exp(logit_r))               (natural-exp logits, base-2 log)
// A token with no valid index gets output 0 and lse -inf, as in the reference.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kh/abi.h"

namespace {

constexpr int kHeads = 16;
constexpr int kCkvDim = 512;
constexpr int kKpeDim = 64;
constexpr int kPageSize = 64;
constexpr int kTopK = 2048;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kCkvPerLane = kCkvDim / 32;      // 16: two runs of 8 (lane*8 and 256 + lane*8)
constexpr float kLog2E = 1.4426950408889634f;  // lse is base 2: log2(x) = ln(x) * log2(e)
constexpr int kNumTensors =
    8;  // q_nope q_pe ckv_cache kpe_cache sparse_indices sm_scale | output lse

const char* g_error = "";

int fail(int status, const char* message) {
  g_error = message;
  return status;
}

bool is_tensor(const DLTensor& t, uint8_t code, uint8_t bits,
               std::initializer_list<int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<int32_t>(shape.size()) || !t.data) return false;
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != shape.begin()[i]) return false;
    if (t.strides && t.shape[i] != 1 && t.strides[i] != stride) return false;
    stride *= t.shape[i];
  }
  return true;
}

template <typename T>
T* data_of(const DLTensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// ---- device code ------------------------------------------------------------------------------

__device__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// 8 consecutive bf16 (one 16-byte load) as floats.
__device__ void load8(const __nv_bfloat16* p, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(pairs[i]);
    out[2 * i] = f.x, out[2 * i + 1] = f.y;
  }
}

struct AttentionArgs {
  const __nv_bfloat16* q_nope;  // [T, 16, 512]
  const __nv_bfloat16* q_pe;    // [T, 16, 64]
  const __nv_bfloat16* ckv;     // [num_pages * 64, 512] (pages flattened)
  const __nv_bfloat16* kpe;     // [num_pages * 64, 64]
  const int32_t* indices;       // [T, 2048]
  int64_t num_rows;             // num_pages * 64
  float sm_scale;
  __nv_bfloat16* output;  // [T, 16, 512]
  float* lse;             // [T, 16]
};

__global__ void __launch_bounds__(kThreads) dsa_attention_kernel(AttentionArgs args) {
  const int64_t token = blockIdx.x / kHeads;
  const int64_t head = blockIdx.x;  // token * 16 + h
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  __shared__ int32_t rows[kTopK];
  for (int j = threadIdx.x; j < kTopK; j += kThreads) rows[j] = args.indices[token * kTopK + j];

  // This lane's slice of the query: ckv dims [lane*8, +8) and [256 + lane*8, +8), kpe dims
  // [lane*2, +2). The same slice of every key row is loaded below.
  float q[kCkvPerLane], qpe[2];
  load8(args.q_nope + head * kCkvDim + lane * 8, q);
  load8(args.q_nope + head * kCkvDim + kCkvDim / 2 + lane * 8, q + 8);
  const float2 qpe2 =
      __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(args.q_pe + head * kKpeDim)[lane]);
  qpe[0] = qpe2.x, qpe[1] = qpe2.y;
  __syncthreads();

  // Online softmax over this warp's indices j = warp, warp + 8, ...: running max m, running sum
  // of exp(logit - m) and the running weighted sum of value rows, all rescaled when m grows.
  float m = -INFINITY, l = 0.0f, acc[kCkvPerLane] = {};
  for (int j = warp; j < kTopK; j += kWarps) {
    const int64_t r = rows[j];
    // -1 is padding; anything else outside the cache would be an invalid input, skipped rather
    // than read out of bounds. (The branch is uniform across the warp.)
    if (r < 0 || r >= args.num_rows) continue;
    float kv[kCkvPerLane];
    load8(args.ckv + r * kCkvDim + lane * 8, kv);
    load8(args.ckv + r * kCkvDim + kCkvDim / 2 + lane * 8, kv + 8);
    const float2 kp =
        __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(args.kpe + r * kKpeDim)[lane]);
    float dot = qpe[0] * kp.x + qpe[1] * kp.y;
#pragma unroll
    for (int i = 0; i < kCkvPerLane; ++i) dot += q[i] * kv[i];
    const float logit = warp_sum(dot) * args.sm_scale;
    const float m_new = fmaxf(m, logit);
    const float rescale = expf(m - m_new);  // 0 on the first valid row (m = -inf)
    const float p = expf(logit - m_new);
    l = l * rescale + p;
#pragma unroll
    for (int i = 0; i < kCkvPerLane; ++i) acc[i] = acc[i] * rescale + p * kv[i];
    m = m_new;
  }

  // Merge the 8 warps: rescale each warp's (l, acc) to the common maximum.
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][kCkvDim];
  if (lane == 0) warp_m[warp] = m, warp_l[warp] = l;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    warp_acc[warp][lane * 8 + i] = acc[i];
    warp_acc[warp][kCkvDim / 2 + lane * 8 + i] = acc[8 + i];
  }
  __syncthreads();

  float m_all = -INFINITY;
  for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  if (m_all == -INFINITY) {  // no valid index at all: zero output, lse -inf
    for (int d = threadIdx.x; d < kCkvDim; d += kThreads)
      args.output[head * kCkvDim + d] = __float2bfloat16_rn(0.0f);
    if (threadIdx.x == 0) args.lse[head] = -INFINITY;
    return;
  }
  float weight[kWarps], l_all = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    weight[w] = expf(warp_m[w] - m_all);  // 0 for a warp that saw no valid index
    l_all += warp_l[w] * weight[w];
  }
  for (int d = threadIdx.x; d < kCkvDim; d += kThreads) {
    float sum = 0.0f;
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * weight[w];
    args.output[head * kCkvDim + d] = __float2bfloat16_rn(sum / l_all);
  }
  if (threadIdx.x == 0) args.lse[head] = (m_all + logf(l_all)) * kLog2E;
}

}  // namespace

KH_EXPORT int kh_dsa_sparse_attention(const DLTensor* t, int32_t num_tensors, void* stream,
                                      void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != kNumTensors || t[0].ndim != 3 || t[2].ndim != 3)
    return fail(KH_ERROR_INVALID_ARGUMENT, "expected 8 tensors, q_nope [T,16,512], ckv [P,64,512]");
  const int64_t T = t[0].shape[0], num_pages = t[2].shape[0];
  const bool shapes_ok = is_tensor(t[0], kDLBfloat, 16, {T, kHeads, kCkvDim}) &&
                         is_tensor(t[1], kDLBfloat, 16, {T, kHeads, kKpeDim}) &&
                         is_tensor(t[2], kDLBfloat, 16, {num_pages, kPageSize, kCkvDim}) &&
                         is_tensor(t[3], kDLBfloat, 16, {num_pages, kPageSize, kKpeDim}) &&
                         is_tensor(t[4], kDLInt, 32, {T, kTopK}) &&
                         is_tensor(t[5], kDLFloat, 32, {}) &&
                         is_tensor(t[6], kDLBfloat, 16, {T, kHeads, kCkvDim}) &&
                         is_tensor(t[7], kDLFloat, 32, {T, kHeads});
  if (!shapes_ok) return fail(KH_ERROR_INVALID_ARGUMENT, "a tensor has the wrong shape or dtype");

  AttentionArgs args;
  args.q_nope = data_of<const __nv_bfloat16>(t[0]);
  args.q_pe = data_of<const __nv_bfloat16>(t[1]);
  args.ckv = data_of<const __nv_bfloat16>(t[2]);
  args.kpe = data_of<const __nv_bfloat16>(t[3]);
  args.indices = data_of<const int32_t>(t[4]);
  args.num_rows = num_pages * kPageSize;
  args.sm_scale = *data_of<const float>(t[5]);  // 0-d host tensor
  args.output = data_of<__nv_bfloat16>(t[6]);
  args.lse = data_of<float>(t[7]);
  if (!aligned16(args.q_nope) || !aligned16(args.ckv))
    return fail(KH_ERROR_INVALID_ARGUMENT, "q_nope and ckv_cache must be 16-byte aligned");
  if (T == 0) return KH_OK;

  dsa_attention_kernel<<<static_cast<unsigned>(T * kHeads), kThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(args);
  if (cudaGetLastError() != cudaSuccess) return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* kh_dsa_sparse_attention_error() {
  return g_error;
}
