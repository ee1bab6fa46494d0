// The C ABI entry of GDN prefill (kh candidate ABI, include/kh/abi.h): checks the DLPack tensors
// against the definition, resolves the scale, and hands the call to the dispatch. It allocates
// nothing, never synchronises and reads only host memory (the 0-d scale; cu_seqlens stays on the
// device), so the call is CUDA-graph capturable. It also reports the workspace it wants (the
// context-parallel route's group maps), from the token and sequence counts alone.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "dispatch.h"
#include "gdn_prefill.cuh"
#include "kh/abi.h"

namespace khk::gdn_prefill {
namespace {

// q k v state A_log a dt_bias b cu_seqlens scale | output new_state
enum Tensor { kQ, kK, kV, kState, kALog, kA, kDtBias, kB, kCuSeqlens, kScale, kOutput, kNewState, kCount };

// One CTA per (sequence, head, slab) with up to 8 slabs: the grid stays within 2^31 - 1.
constexpr int64_t kMaxSeqs = int64_t{1} << 24;
// Token indices reach T * 8 * 128 elements of v and output; far inside int64 for any T that fits
// in memory, but a bound keeps the arithmetic obviously safe.
constexpr int64_t kMaxTokens = int64_t{1} << 36;

thread_local const char* t_error = "";  // message for the last non-zero status of this thread

int fail(int status, const char* message) {
  t_error = message;
  return status;
}

bool has_layout(const DLTensor& t, uint8_t code, uint8_t bits, std::initializer_list<int64_t> shape) {
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

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace
}  // namespace khk::gdn_prefill

KH_EXPORT int khk_gdn_prefill_qk4_v8_d128_k_last(const DLTensor* t, int32_t num_tensors,
                                                 void* stream, void* workspace,
                                                 uint64_t workspace_bytes) {
  using namespace khk::gdn_prefill;
  if (num_tensors != kCount || t[kQ].ndim != 3 || t[kCuSeqlens].ndim != 1)
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "expected 12 tensors (q k v state A_log a dt_bias b cu_seqlens scale output "
                "new_state) with q of shape [T, 4, 128] and cu_seqlens of shape [N + 1]");
  const int64_t T = t[kQ].shape[0], N = t[kCuSeqlens].shape[0] - 1;
  if (T < 0 || N < 0)
    return fail(KH_ERROR_INVALID_ARGUMENT, "q has a negative token count or cu_seqlens is empty");
  if (!has_layout(t[kQ], kDLBfloat, 16, {T, kQKHeads, kHeadSize}) ||
      !has_layout(t[kK], kDLBfloat, 16, {T, kQKHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "q and k must be compact bf16 [T, 4, 128]");
  if (!has_layout(t[kV], kDLBfloat, 16, {T, kVHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "v must be compact bf16 [T, 8, 128]");
  if (t[kState].data && !has_layout(t[kState], kDLFloat, 32, {N, kVHeads, kHeadSize, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "state must be absent or compact f32 [N, 8, 128, 128]");
  if (!has_layout(t[kALog], kDLFloat, 32, {kVHeads}) ||
      !has_layout(t[kDtBias], kDLFloat, 32, {kVHeads}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "A_log and dt_bias must be f32 [8]");
  if (!has_layout(t[kA], kDLBfloat, 16, {T, kVHeads}) ||
      !has_layout(t[kB], kDLBfloat, 16, {T, kVHeads}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "a and b must be bf16 [T, 8]");
  if (!has_layout(t[kCuSeqlens], kDLInt, 64, {N + 1}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "cu_seqlens must be compact int64 [N + 1]");
  if (t[kScale].data && !has_layout(t[kScale], kDLFloat, 32, {}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "scale must be a 0-d f32 host tensor");
  if (!has_layout(t[kOutput], kDLBfloat, 16, {T, kVHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "output must be compact bf16 [T, 8, 128]");
  if (!has_layout(t[kNewState], kDLFloat, 32, {N, kVHeads, kHeadSize, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "new_state must be compact f32 [N, 8, 128, 128]");

  PrefillArgs args;
  args.q = data_of<const __nv_bfloat16>(t[kQ]);
  args.k = data_of<const __nv_bfloat16>(t[kK]);
  args.v = data_of<const __nv_bfloat16>(t[kV]);
  args.state = data_of<const float>(t[kState]);
  args.A_log = data_of<const float>(t[kALog]);
  args.a = data_of<const __nv_bfloat16>(t[kA]);
  args.dt_bias = data_of<const float>(t[kDtBias]);
  args.b = data_of<const __nv_bfloat16>(t[kB]);
  args.cu_seqlens = data_of<const int64_t>(t[kCuSeqlens]);
  // scale is a 0-d host tensor; 0 (or absent) means 1/sqrt(head_size), as in the reference.
  const float scale = t[kScale].data ? *data_of<const float>(t[kScale]) : 0.0f;
  args.scale = scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(kHeadSize)) : scale;
  args.output = data_of<__nv_bfloat16>(t[kOutput]);
  args.new_state = data_of<float>(t[kNewState]);
  args.total_tokens = T;
  args.num_seqs = N;
  // Rows of q, k, v and output move as 16-byte pieces, the state as 8-byte pairs.
  if (!aligned(args.q, 16) || !aligned(args.k, 16) || !aligned(args.v, 16) ||
      !aligned(args.output, 16) || (args.state && !aligned(args.state, 8)) ||
      !aligned(args.new_state, 8))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "q, k, v and output must be 16-byte aligned, state and new_state 8-byte aligned");
  if (N > kMaxSeqs || T > kMaxTokens)
    return fail(KH_ERROR_INVALID_ARGUMENT, "more than 2^24 sequences or 2^36 tokens");
  const auto s = static_cast<cudaStream_t>(stream);
  if (N == 0) {  // no sequence, no state: every token lies outside and its output is zero
    if (T > 0 && cudaMemsetAsync(args.output, 0, T * kVHeads * kHeadSize * 2, s) != cudaSuccess)
      return fail(KH_ERROR_LAUNCH, "cudaMemsetAsync failed");
    return KH_OK;
  }

  if (dispatch(args, workspace, workspace_bytes, s) != cudaSuccess)
    return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT uint64_t khk_gdn_prefill_qk4_v8_d128_k_last_workspace_bytes(const DLTensor* t,
                                                                    int32_t num_tensors) {
  using namespace khk::gdn_prefill;
  if (num_tensors != kCount || t[kQ].ndim != 3 || t[kCuSeqlens].ndim != 1) return 0;
  const int64_t T = t[kQ].shape[0], N = t[kCuSeqlens].shape[0] - 1;
  return T > 0 && N > 0 ? workspace_bytes(T, N) : 0;
}

KH_EXPORT const char* khk_gdn_prefill_qk4_v8_d128_k_last_error() {
  return khk::gdn_prefill::t_error;
}
