// A straightforward CUDA implementation of gdn_decode_qk4_v8_d128_k_last: one Gated Delta Net
// step per (batch element, value head). Written for clarity, not speed: one CTA per (b, h), each
// warp walking value rows of the k-last state.
//
// Math (the definition's reference, per (b, h), M = state[b, h] as [v][k], k-last):
//   g = exp(-exp(A_log[h]) * softplus(a + dt_bias[h]))   (softplus: torch's, linear above 20)
//   beta = sigmoid(b);  q, k from q/k head h / 2 (GVA)
//   M <- g M;  u = M k;  M <- M + beta (v - u) k^T;  out = scale * M q   (the UPDATED state)
// Row v of M only needs its own u[v], so every row is independent: a warp loads a row (lanes
// cover the 128 k columns, 4 each), reduces u and the output with shuffles, and writes the row.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kh/abi.h"

namespace {

constexpr int kQKHeads = 4;
constexpr int kVHeads = 8;
constexpr int kHeadSize = 128;
constexpr int kWarps = 8;  // per CTA: each warp owns every 8th value row of the head
constexpr int kThreads = kWarps * 32;
constexpr int kNumTensors = 11;  // q k v state A_log a dt_bias b scale | output new_state

const char* g_error = "";  // message for the last non-zero status (<entry>_error)

int fail(int status, const char* message) {
  g_error = message;
  return status;
}

// ---- DLPack checks ----------------------------------------------------------------------------

bool is_tensor(const DLTensor& t, uint8_t code, uint8_t bits,
               std::initializer_list<int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<int32_t>(shape.size())) return false;
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != shape.begin()[i]) return false;
    if (t.strides && t.shape[i] != 1 && t.strides[i] != stride) return false;  // compact only
    stride *= t.shape[i];
  }
  return true;
}

template <typename T>
T* data_of(const DLTensor& t) {
  return t.data ? reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset) : nullptr;
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

__device__ float softplus(float x) {
  return x > 20.0f ? x : log1pf(expf(x));
}

struct DecodeArgs {
  const __nv_bfloat16* q;  // [B, 1, 4, 128]
  const __nv_bfloat16* k;  // [B, 1, 4, 128]
  const __nv_bfloat16* v;  // [B, 1, 8, 128]
  const float* state;      // [B, 8, 128, 128] k-last, or null (zeros)
  const float* A_log;      // [8]
  const __nv_bfloat16* a;  // [B, 1, 8]
  const float* dt_bias;    // [8]
  const __nv_bfloat16* b;  // [B, 1, 8]
  float scale;
  __nv_bfloat16* output;  // [B, 1, 8, 128]
  float* new_state;       // [B, 8, 128, 128] k-last
};

__global__ void __launch_bounds__(kThreads) gdn_decode_kernel(DecodeArgs args) {
  const int64_t head = blockIdx.x;  // b * 8 + h: index into [B, 1, 8] and [B, 8, ...]
  const int h = static_cast<int>(head % kVHeads);
  const int64_t batch = head / kVHeads;
  const int64_t qk_row = (batch * kQKHeads + h / (kVHeads / kQKHeads)) * kHeadSize;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Gates, in fp32 as the reference computes them (every thread gets the same values).
  const float x = __bfloat162float(args.a[head]) + args.dt_bias[h];
  const float g = expf(-expf(args.A_log[h]) * softplus(x));
  const float beta = 1.0f / (1.0f + expf(-__bfloat162float(args.b[head])));

  // This lane's 4 columns of k and q.
  float kk[4], qq[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    kk[i] = __bfloat162float(args.k[qk_row + lane * 4 + i]);
    qq[i] = __bfloat162float(args.q[qk_row + lane * 4 + i]);
  }

  const int64_t head_state = head * kHeadSize * kHeadSize;
  for (int row = warp; row < kHeadSize; row += kWarps) {
    const int64_t at = head_state + row * kHeadSize + lane * 4;
    float4 m = args.state ? *reinterpret_cast<const float4*>(args.state + at)
                          : make_float4(0.f, 0.f, 0.f, 0.f);
    m.x *= g, m.y *= g, m.z *= g, m.w *= g;  // decay
    const float u = warp_sum(m.x * kk[0] + m.y * kk[1] + m.z * kk[2] + m.w * kk[3]);
    const float delta = beta * (__bfloat162float(args.v[head * kHeadSize + row]) - u);
    m.x += delta * kk[0], m.y += delta * kk[1], m.z += delta * kk[2], m.w += delta * kk[3];
    const float o = warp_sum(m.x * qq[0] + m.y * qq[1] + m.z * qq[2] + m.w * qq[3]);
    // The row was fully read before this write, so state and new_state may alias.
    *reinterpret_cast<float4*>(args.new_state + at) = m;
    if (lane == 0) args.output[head * kHeadSize + row] = __float2bfloat16_rn(args.scale * o);
  }
}

}  // namespace

KH_EXPORT int kh_gdn_decode(const DLTensor* t, int32_t num_tensors, void* stream,
                            void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != kNumTensors || t[0].ndim != 4)
    return fail(KH_ERROR_INVALID_ARGUMENT, "expected 11 tensors with q of shape [B, 1, 4, 128]");
  const int64_t B = t[0].shape[0];
  const bool shapes_ok =
      is_tensor(t[0], kDLBfloat, 16, {B, 1, kQKHeads, kHeadSize}) &&
      is_tensor(t[1], kDLBfloat, 16, {B, 1, kQKHeads, kHeadSize}) &&
      is_tensor(t[2], kDLBfloat, 16, {B, 1, kVHeads, kHeadSize}) &&
      (!t[3].data || is_tensor(t[3], kDLFloat, 32, {B, kVHeads, kHeadSize, kHeadSize})) &&
      is_tensor(t[4], kDLFloat, 32, {kVHeads}) && is_tensor(t[5], kDLBfloat, 16, {B, 1, kVHeads}) &&
      is_tensor(t[6], kDLFloat, 32, {kVHeads}) && is_tensor(t[7], kDLBfloat, 16, {B, 1, kVHeads}) &&
      (!t[8].data || is_tensor(t[8], kDLFloat, 32, {})) &&
      is_tensor(t[9], kDLBfloat, 16, {B, 1, kVHeads, kHeadSize}) &&
      is_tensor(t[10], kDLFloat, 32, {B, kVHeads, kHeadSize, kHeadSize});
  if (!shapes_ok) return fail(KH_ERROR_INVALID_ARGUMENT, "a tensor has the wrong shape or dtype");

  DecodeArgs args;
  args.q = data_of<const __nv_bfloat16>(t[0]);
  args.k = data_of<const __nv_bfloat16>(t[1]);
  args.v = data_of<const __nv_bfloat16>(t[2]);
  args.state = data_of<const float>(t[3]);
  args.A_log = data_of<const float>(t[4]);
  args.a = data_of<const __nv_bfloat16>(t[5]);
  args.dt_bias = data_of<const float>(t[6]);
  args.b = data_of<const __nv_bfloat16>(t[7]);
  // scale is a 0-d host tensor; 0 (or none) means 1/sqrt(head_size), as in the reference.
  const float scale = t[8].data ? *data_of<const float>(t[8]) : 0.0f;
  args.scale = scale == 0.0f ? 1.0f / sqrtf(static_cast<float>(kHeadSize)) : scale;
  args.output = data_of<__nv_bfloat16>(t[9]);
  args.new_state = data_of<float>(t[10]);
  if ((args.state && !aligned16(args.state)) || !aligned16(args.new_state))
    return fail(KH_ERROR_INVALID_ARGUMENT, "state and new_state must be 16-byte aligned");
  if (B == 0) return KH_OK;

  gdn_decode_kernel<<<static_cast<unsigned>(B * kVHeads), kThreads, 0,
                      static_cast<cudaStream_t>(stream)>>>(args);
  if (cudaGetLastError() != cudaSuccess) return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* kh_gdn_decode_error() {
  return g_error;
}
