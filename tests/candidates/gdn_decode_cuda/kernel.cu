// CUDA gdn_decode_qk4_v8_d128_k_last with planted faults, for the harness's own GPU tests. With
// FAULT=none it is the example kernel (examples/gdn_decode_qk4_v8_d128_k_last): one CTA per
// (batch, value head), a warp per k-last state row. Every other FAULT value plants one bug that a
// specific harness check must catch; candidate.toml lists them and the comments at each fault say
// exactly what it does.
//
// extra_output_pass is the one performance-only fault (for the promotion gate: a candidate made
// slower on purpose, outputs bit-identical to FAULT=none). After the decode, a second kernel reads
// every element of `output` and writes it back unchanged (volatile 16-bit accesses). Its memory
// traffic is negligible: `output` is B * 8 * 128 bf16 = 2 KiB per batch row, against 1 MiB per
// row for reading `state` and writing `new_state` (+0.4% bytes). What dominates is the extra
// launch: under span timing (first kernel start to last kernel end) it adds the gap between the
// two kernels plus the small kernel's own run, a fixed ~2-3 us per call whatever the batch. That
// is a large fraction of a small-batch decode (the best latencies recorded in the official
// workload table run from ~2.4 us at B=1 to ~12.6 us at B=64) and a smaller one at large batches;
// the ~2-3 us is an estimate, not measured here.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string_view>

#include "kh/abi.h"

#ifndef FAULT
#define FAULT none
#endif
#define KH_STRINGIFY2(x) #x
#define KH_STRINGIFY(x) KH_STRINGIFY2(x)

namespace {

constexpr std::string_view kFault = KH_STRINGIFY(FAULT);
constexpr std::string_view kFaults[] = {"none",
                                        "segfault",
                                        "hang",
                                        "skip_element",
                                        "write_past_end",
                                        "write_input",
                                        "cache_by_address",
                                        "oob_read",
                                        "idle_after_checks",
                                        "alternate_kernels",
                                        "extra_output_pass"};
constexpr bool known_fault() {
  for (std::string_view f : kFaults)
    if (f == kFault) return true;
  return false;
}
static_assert(known_fault(), "FAULT must be one of the values listed in candidate.toml");
// Plain bools, usable in device code.
constexpr bool kSkipElement = kFault == "skip_element";
constexpr bool kOobRead = kFault == "oob_read";

constexpr int kQKHeads = 4;
constexpr int kVHeads = 8;
constexpr int kHeadSize = 128;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kNumTensors = 11;
constexpr int64_t kMaxCachedBatch = 64;  // cache_by_address keeps results for B <= 64

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

// ---- the correct kernel (plus the skip_element and oob_read hooks) ----------------------------

__device__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ float softplus(float x) {
  return x > 20.0f ? x : log1pf(expf(x));
}

struct DecodeArgs {
  const __nv_bfloat16 *q, *k, *v;
  const float* state;  // null: absent (zeros)
  const float* A_log;
  const __nv_bfloat16* a;
  const float* dt_bias;
  const __nv_bfloat16* b;
  float scale;
  __nv_bfloat16* output;
  float* new_state;
  int64_t k_elements;  // for oob_read
};

__global__ void __launch_bounds__(kThreads) gdn_decode_kernel(DecodeArgs args) {
  const int64_t head = blockIdx.x;  // b * 8 + h
  const int h = static_cast<int>(head % kVHeads);
  const int64_t qk_row = (head / kVHeads * kQKHeads + h / (kVHeads / kQKHeads)) * kHeadSize;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float x = __bfloat162float(args.a[head]) + args.dt_bias[h];
  const float g = expf(-expf(args.A_log[h]) * softplus(x));
  const float beta = 1.0f / (1.0f + expf(-__bfloat162float(args.b[head])));
  float kk[4], qq[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    kk[i] = __bfloat162float(args.k[qk_row + lane * 4 + i]);
    qq[i] = __bfloat162float(args.q[qk_row + lane * 4 + i]);
  }
  if constexpr (kOobRead) {
    // oob_read: the first thread of the last CTA reads the 4 bf16 just past the end of k. The
    // reads are volatile, so they are issued, and their values are discarded, so the outputs stay
    // bit-exact: only compute-sanitizer memcheck (or a guarded allocation) can see it.
    if (head == static_cast<int64_t>(gridDim.x) - 1 && threadIdx.x == 0) {
      const volatile uint16_t* past_end =
          reinterpret_cast<const volatile uint16_t*>(args.k) + args.k_elements;
      for (int i = 0; i < 4; ++i) (void)past_end[i];
    }
  }
  const int64_t head_state = head * kHeadSize * kHeadSize;
  for (int row = warp; row < kHeadSize; row += kWarps) {
    const int64_t at = head_state + row * kHeadSize + lane * 4;
    float4 m = args.state ? *reinterpret_cast<const float4*>(args.state + at)
                          : make_float4(0.f, 0.f, 0.f, 0.f);
    m.x *= g, m.y *= g, m.z *= g, m.w *= g;
    const float u = warp_sum(m.x * kk[0] + m.y * kk[1] + m.z * kk[2] + m.w * kk[3]);
    const float delta = beta * (__bfloat162float(args.v[head * kHeadSize + row]) - u);
    m.x += delta * kk[0], m.y += delta * kk[1], m.z += delta * kk[2], m.w += delta * kk[3];
    const float o = warp_sum(m.x * qq[0] + m.y * qq[1] + m.z * qq[2] + m.w * qq[3]);
    *reinterpret_cast<float4*>(args.new_state + at) = m;
    // skip_element: output[0]'s last element (batch 0, head 7, v 127) is never written.
    const bool skipped = kSkipElement && head == kVHeads - 1 && row == kHeadSize - 1;
    if (lane == 0 && !skipped)
      args.output[head * kHeadSize + row] = __float2bfloat16_rn(args.scale * o);
  }
}

// ---- fault kernels ----------------------------------------------------------------------------

// segfault: a store through the pointer it is given (null) -> "illegal address", a sticky error
// that poisons the whole CUDA context.
__global__ void do_nothing() {}

__global__ void store_through(float* p) {
  *p = 1.0f;
}

// hang: spins until a flag nobody ever sets; volatile, so every iteration really reads it.
__device__ volatile int g_release = 0;
__global__ void spin_forever() {
  while (g_release == 0) {
  }
}

// write_past_end: one float (0x3f800001) just past the end of new_state.
// write_input: flips the lowest bit of v[0], after the decode kernel read it (same stream).
__global__ void poke_past_end(float* p) {
  *p = __uint_as_float(0x3f800001u);
}
__global__ void flip_low_bit(uint16_t* p) {
  *p ^= 1u;
}

// extra_output_pass: a redundant second pass that reads every output element and writes it back
// unchanged. Volatile accesses, so the compiler must issue both the load and the store; the bits
// are copied, not converted, so the output stays bit-identical to FAULT=none (NaN payloads too).
__global__ void rewrite_output(uint16_t* output, int64_t elements) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < elements) {
    volatile uint16_t* p = output;
    p[i] = p[i];
  }
}

// cache_by_address: device-side copies of the outputs of the last call per q address.
__device__ __nv_bfloat16 g_cached_output[kMaxCachedBatch * kVHeads * kHeadSize];
__device__ float g_cached_state[kMaxCachedBatch * kVHeads * kHeadSize * kHeadSize];
std::set<const void*>& seen_q_addresses() {
  static std::set<const void*> seen;  // only ever holds addresses of calls with B <= 64
  return seen;
}

}  // namespace

KH_EXPORT int kh_gdn_decode_cuda(const DLTensor* t, int32_t num_tensors, void* stream,
                                 void* /*workspace*/, uint64_t /*workspace_bytes*/) {
  if (num_tensors != kNumTensors || t[0].ndim != 4) return KH_ERROR_INVALID_ARGUMENT;
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
  if (!shapes_ok) return KH_ERROR_INVALID_ARGUMENT;

  DecodeArgs args;
  args.q = data_of<const __nv_bfloat16>(t[0]);
  args.k = data_of<const __nv_bfloat16>(t[1]);
  args.v = data_of<const __nv_bfloat16>(t[2]);
  args.state = data_of<const float>(t[3]);
  args.A_log = data_of<const float>(t[4]);
  args.a = data_of<const __nv_bfloat16>(t[5]);
  args.dt_bias = data_of<const float>(t[6]);
  args.b = data_of<const __nv_bfloat16>(t[7]);
  const float scale = t[8].data ? *data_of<const float>(t[8]) : 0.0f;
  args.scale = scale == 0.0f ? 1.0f / sqrtf(static_cast<float>(kHeadSize)) : scale;
  args.output = data_of<__nv_bfloat16>(t[9]);
  args.new_state = data_of<float>(t[10]);
  args.k_elements = B * kQKHeads * kHeadSize;
  if (B == 0) return KH_OK;
  const auto s = static_cast<cudaStream_t>(stream);
  const size_t output_bytes = B * kVHeads * kHeadSize * sizeof(__nv_bfloat16);
  const size_t state_bytes = B * kVHeads * kHeadSize * kHeadSize * sizeof(float);

  // Timing faults: correct outputs for the three checked calls of one trial, then a call that
  // launches nothing (the official timer's "no kernel activities"), or every other call an extra
  // kernel (its "inconsistent kernel names").
  static int calls = 0;
  ++calls;
  if constexpr (kFault == "idle_after_checks")
    if (calls > 3) return KH_OK;
  if constexpr (kFault == "alternate_kernels")
    if (calls % 2 == 0) do_nothing<<<1, 1, 0, s>>>();

  if constexpr (kFault == "segfault") store_through<<<1, 1, 0, s>>>(nullptr);
  if constexpr (kFault == "hang") spin_forever<<<1, 1, 0, s>>>();

  void *cached_output = nullptr, *cached_state = nullptr;
  bool replay = false;
  if constexpr (kFault == "cache_by_address") {
    cudaGetSymbolAddress(&cached_output, g_cached_output);
    cudaGetSymbolAddress(&cached_state, g_cached_state);
    // Keyed on q's address alone: new contents at the same address replay stale results.
    replay = B <= kMaxCachedBatch && !seen_q_addresses().insert(t[0].data).second;
  }

  if (replay) {
    cudaMemcpyAsync(args.output, cached_output, output_bytes, cudaMemcpyDeviceToDevice, s);
    cudaMemcpyAsync(args.new_state, cached_state, state_bytes, cudaMemcpyDeviceToDevice, s);
  } else {
    gdn_decode_kernel<<<static_cast<unsigned>(B * kVHeads), kThreads, 0, s>>>(args);
  }

  if constexpr (kFault == "cache_by_address") {
    if (!replay && B <= kMaxCachedBatch) {
      cudaMemcpyAsync(cached_output, args.output, output_bytes, cudaMemcpyDeviceToDevice, s);
      cudaMemcpyAsync(cached_state, args.new_state, state_bytes, cudaMemcpyDeviceToDevice, s);
    }
  }
  if constexpr (kFault == "write_past_end")
    poke_past_end<<<1, 1, 0, s>>>(args.new_state + B * kVHeads * kHeadSize * kHeadSize);
  if constexpr (kFault == "write_input")
    flip_low_bit<<<1, 1, 0, s>>>(reinterpret_cast<uint16_t*>(data_of<__nv_bfloat16>(t[2])));
  if constexpr (kFault == "extra_output_pass") {
    // A performance fault only: one more launch, after the decode on the same stream, that reads
    // and rewrites the B * 8 * 128 bf16 of `output` (new_state is left alone).
    const int64_t elements = B * kVHeads * kHeadSize;
    rewrite_output<<<static_cast<unsigned>((elements + kThreads - 1) / kThreads), kThreads, 0, s>>>(
        reinterpret_cast<uint16_t*>(args.output), elements);
  }

  return cudaGetLastError() == cudaSuccess ? KH_OK : KH_ERROR_LAUNCH;
}
