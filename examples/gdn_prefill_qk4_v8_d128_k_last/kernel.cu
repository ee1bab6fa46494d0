// A straightforward CUDA implementation of gdn_prefill_qk4_v8_d128_k_last: the gated delta rule
// of gdn_decode applied token by token over each sequence of a varlen batch. Written for clarity:
// one CTA per (sequence, value head) walks that sequence's tokens in order (the recurrence is
// sequential), holding the 128 x 128 fp32 state in registers, half a value row per thread.
//
// Per token t of sequence i, value head h (M = state row-major [v][k], k-last):
//   g = exp(-exp(A_log[h]) * softplus(a[t,h] + dt_bias[h])),  beta = sigmoid(b[t,h])
//   M <- g M;  u = M k_t;  M <- M + beta (v_t - u) k_t^T;  out[t,h] = scale * M q_t
// Row v of M needs nothing from other rows (u[v], the update and out[v] are row-local), so a pair
// of adjacent threads owns row v, 64 columns each, and combines its two partial dot products with
// one shuffle. (A whole row per thread needs 128 state registers and spills.) k_t and q_t are
// shared through shared memory, double-buffered so the next token's loads overlap this token's
// math. Sequences of length 0 keep new_state ZERO, as the reference does.
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
constexpr int kThreads = 2 * kHeadSize;  // two threads per value row
constexpr int kCols = kHeadSize / 2;     // state columns per thread
constexpr int kNumTensors =
    12;  // q k v state A_log a dt_bias b cu_seqlens scale | output new_state

const char* g_error = "";

int fail(int status, const char* message) {
  g_error = message;
  return status;
}

bool is_tensor(const DLTensor& t, uint8_t code, uint8_t bits,
               std::initializer_list<int64_t> shape) {
  if (t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1) return false;
  if (t.ndim != static_cast<int32_t>(shape.size())) return false;
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
  return t.data ? reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset) : nullptr;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// ---- device code ------------------------------------------------------------------------------

__device__ float softplus(float x) {
  return x > 20.0f ? x : log1pf(expf(x));
}

struct PrefillArgs {
  const __nv_bfloat16* q;     // [T, 4, 128]
  const __nv_bfloat16* k;     // [T, 4, 128]
  const __nv_bfloat16* v;     // [T, 8, 128]
  const float* state;         // [N, 8, 128, 128] k-last, or null (zeros)
  const float* A_log;         // [8]
  const __nv_bfloat16* a;     // [T, 8]
  const float* dt_bias;       // [8]
  const __nv_bfloat16* b;     // [T, 8]
  const int64_t* cu_seqlens;  // [N + 1]
  int64_t total_tokens;       // T
  float scale;
  __nv_bfloat16* output;  // [T, 8, 128]
  float* new_state;       // [N, 8, 128, 128] k-last
};

// What one thread needs of one token: one element of k and of q (thread i stages element i % 128
// for the CTA), the v element of its row and the head's gates.
struct TokenInputs {
  float k, q, v, g, beta;
};

__device__ TokenInputs load_token(const PrefillArgs& args, int64_t t, int h, int row) {
  const int element = threadIdx.x % kHeadSize;
  const int64_t qk = (t * kQKHeads + h / (kVHeads / kQKHeads)) * kHeadSize + element;  // GVA
  const int64_t head = t * kVHeads + h;
  TokenInputs in;
  in.k = __bfloat162float(args.k[qk]);
  in.q = __bfloat162float(args.q[qk]);
  in.v = __bfloat162float(args.v[head * kHeadSize + row]);
  const float x = __bfloat162float(args.a[head]) + args.dt_bias[h];
  in.g = expf(-expf(args.A_log[h]) * softplus(x));
  in.beta = 1.0f / (1.0f + expf(-__bfloat162float(args.b[head])));
  return in;
}

__global__ void __launch_bounds__(kThreads) gdn_prefill_kernel(PrefillArgs args) {
  const int64_t seq = blockIdx.x / kVHeads;
  const int h = blockIdx.x % kVHeads;
  const int row = threadIdx.x / 2;
  const int col0 = (threadIdx.x % 2) * kCols;  // this thread's columns: [col0, col0 + 64)
  // Clamped so that a malformed cu_seqlens cannot make us read or write outside the tensors.
  const int64_t start = min(max(args.cu_seqlens[seq], int64_t{0}), args.total_tokens);
  const int64_t end = min(max(args.cu_seqlens[seq + 1], int64_t{0}), args.total_tokens);
  const int64_t state_row = ((seq * kVHeads + h) * kHeadSize + row) * kHeadSize + col0;
  float4* new_row = reinterpret_cast<float4*>(args.new_state + state_row);

  if (end <= start) {  // empty sequence: the reference skips it, new_state stays zero
    for (int i = 0; i < kCols / 4; ++i) new_row[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    return;
  }

  float m[kCols];  // this thread's half of row `row`; fully unrolled loops keep it in registers
  if (args.state) {
    const float4* old_row = reinterpret_cast<const float4*>(args.state + state_row);
#pragma unroll
    for (int i = 0; i < kCols / 4; ++i) {
      const float4 x = old_row[i];
      m[4 * i] = x.x, m[4 * i + 1] = x.y, m[4 * i + 2] = x.z, m[4 * i + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kCols; ++i) m[i] = 0.0f;
  }

  __shared__ __align__(16) float k_s[2][kHeadSize];
  __shared__ __align__(16) float q_s[2][kHeadSize];
  TokenInputs cur = load_token(args, start, h, row);
  if (threadIdx.x < kHeadSize) k_s[0][threadIdx.x] = cur.k, q_s[0][threadIdx.x] = cur.q;
  __syncthreads();

  for (int64_t t = start; t < end; ++t) {
    const int buf = static_cast<int>((t - start) & 1);
    // Issue the next token's loads now; they complete while this token is computed.
    TokenInputs next{};
    if (t + 1 < end) next = load_token(args, t + 1, h, row);

    const float4* k4 = reinterpret_cast<const float4*>(k_s[buf] + col0);
    const float4* q4 = reinterpret_cast<const float4*>(q_s[buf] + col0);
    // u = (g M) k, decaying the row on the way; four partial sums shorten the dependency chain.
    float u0 = 0.f, u1 = 0.f, u2 = 0.f, u3 = 0.f;
#pragma unroll
    for (int i = 0; i < kCols / 4; ++i) {
      const float4 kv = k4[i];
      m[4 * i] *= cur.g, m[4 * i + 1] *= cur.g, m[4 * i + 2] *= cur.g, m[4 * i + 3] *= cur.g;
      u0 += m[4 * i] * kv.x, u1 += m[4 * i + 1] * kv.y;
      u2 += m[4 * i + 2] * kv.z, u3 += m[4 * i + 3] * kv.w;
    }
    float u = (u0 + u1) + (u2 + u3);
    u += __shfl_xor_sync(0xffffffffu, u, 1);  // the other half of the row
    const float delta = cur.beta * (cur.v - u);
    // Rank-1 update, then the output from the updated row.
    float o0 = 0.f, o1 = 0.f, o2 = 0.f, o3 = 0.f;
#pragma unroll
    for (int i = 0; i < kCols / 4; ++i) {
      const float4 kv = k4[i], qv = q4[i];
      m[4 * i] += delta * kv.x, m[4 * i + 1] += delta * kv.y;
      m[4 * i + 2] += delta * kv.z, m[4 * i + 3] += delta * kv.w;
      o0 += m[4 * i] * qv.x, o1 += m[4 * i + 1] * qv.y;
      o2 += m[4 * i + 2] * qv.z, o3 += m[4 * i + 3] * qv.w;
    }
    float o = (o0 + o1) + (o2 + o3);
    o += __shfl_xor_sync(0xffffffffu, o, 1);
    if (col0 == 0)
      args.output[(t * kVHeads + h) * kHeadSize + row] = __float2bfloat16_rn(args.scale * o);

    // Publish the next token in the other buffer. Safe: every thread finished reading that
    // buffer before the barrier that ended the previous iteration.
    if (t + 1 < end) {
      if (threadIdx.x < kHeadSize)
        k_s[buf ^ 1][threadIdx.x] = next.k, q_s[buf ^ 1][threadIdx.x] = next.q;
      cur = next;
    }
    __syncthreads();
  }

  // Written after all reads of `state`, so state and new_state may alias.
#pragma unroll
  for (int i = 0; i < kCols / 4; ++i)
    new_row[i] = make_float4(m[4 * i], m[4 * i + 1], m[4 * i + 2], m[4 * i + 3]);
}

}  // namespace

KH_EXPORT int kh_gdn_prefill(const DLTensor* t, int32_t num_tensors, void* stream,
                             void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != kNumTensors || t[0].ndim != 3 || t[8].ndim != 1)
    return fail(KH_ERROR_INVALID_ARGUMENT, "expected 12 tensors, q [T, 4, 128], cu_seqlens [N+1]");
  const int64_t T = t[0].shape[0];
  const int64_t N = t[8].shape[0] - 1;
  if (N < 0) return fail(KH_ERROR_INVALID_ARGUMENT, "cu_seqlens must have at least one element");
  const bool shapes_ok =
      is_tensor(t[0], kDLBfloat, 16, {T, kQKHeads, kHeadSize}) &&
      is_tensor(t[1], kDLBfloat, 16, {T, kQKHeads, kHeadSize}) &&
      is_tensor(t[2], kDLBfloat, 16, {T, kVHeads, kHeadSize}) &&
      (!t[3].data || is_tensor(t[3], kDLFloat, 32, {N, kVHeads, kHeadSize, kHeadSize})) &&
      is_tensor(t[4], kDLFloat, 32, {kVHeads}) && is_tensor(t[5], kDLBfloat, 16, {T, kVHeads}) &&
      is_tensor(t[6], kDLFloat, 32, {kVHeads}) && is_tensor(t[7], kDLBfloat, 16, {T, kVHeads}) &&
      is_tensor(t[8], kDLInt, 64, {N + 1}) && (!t[9].data || is_tensor(t[9], kDLFloat, 32, {})) &&
      is_tensor(t[10], kDLBfloat, 16, {T, kVHeads, kHeadSize}) &&
      is_tensor(t[11], kDLFloat, 32, {N, kVHeads, kHeadSize, kHeadSize});
  if (!shapes_ok) return fail(KH_ERROR_INVALID_ARGUMENT, "a tensor has the wrong shape or dtype");

  PrefillArgs args;
  args.q = data_of<const __nv_bfloat16>(t[0]);
  args.k = data_of<const __nv_bfloat16>(t[1]);
  args.v = data_of<const __nv_bfloat16>(t[2]);
  args.state = data_of<const float>(t[3]);
  args.A_log = data_of<const float>(t[4]);
  args.a = data_of<const __nv_bfloat16>(t[5]);
  args.dt_bias = data_of<const float>(t[6]);
  args.b = data_of<const __nv_bfloat16>(t[7]);
  args.cu_seqlens = data_of<const int64_t>(t[8]);
  args.total_tokens = T;
  const float scale = t[9].data ? *data_of<const float>(t[9]) : 0.0f;
  args.scale = scale == 0.0f ? 1.0f / sqrtf(static_cast<float>(kHeadSize)) : scale;
  args.output = data_of<__nv_bfloat16>(t[10]);
  args.new_state = data_of<float>(t[11]);
  if ((args.state && !aligned16(args.state)) || !aligned16(args.new_state))
    return fail(KH_ERROR_INVALID_ARGUMENT, "state and new_state must be 16-byte aligned");

  const auto s = static_cast<cudaStream_t>(stream);
  // Tokens outside every sequence (cu_seqlens[0] > 0, gaps) get the reference's zero output; the
  // host cannot see cu_seqlens without a device-to-host copy, so clear the whole output first.
  if (T > 0 && cudaMemsetAsync(args.output, 0, T * kVHeads * kHeadSize * 2, s) != cudaSuccess)
    return fail(KH_ERROR_LAUNCH, "cudaMemsetAsync failed");
  if (N > 0) gdn_prefill_kernel<<<static_cast<unsigned>(N * kVHeads), kThreads, 0, s>>>(args);
  if (cudaGetLastError() != cudaSuccess) return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* kh_gdn_prefill_error() {
  return g_error;
}
