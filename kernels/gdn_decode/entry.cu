// The C ABI entry of GDN decode (kh candidate ABI, include/kh/abi.h): checks the DLPack tensors
// against the definition, resolves the scale, and hands the call to the dispatch. It allocates
// nothing, never synchronises and reads only host memory (the 0-d scale), so the call is CUDA-graph
// capturable.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "dispatch.h"
#include "gdn_decode.cuh"
#include "kh/abi.h"

namespace khk::gdn_decode {
namespace {

// q k v state A_log a dt_bias b scale | output new_state
enum Tensor { kQ, kK, kV, kState, kALog, kA, kDtBias, kB, kScale, kOutput, kNewState, kCount };

// Tiles are counted in int64 and at most 2^30 at this batch (2^22 x 8 heads x 32 tiles), so the
// grid stays within its 2^31 - 1 limit even when the occupancy query fails and every tile gets a
// CTA of its own.
constexpr int64_t kMaxBatch = int64_t{1} << 22;

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
}  // namespace khk::gdn_decode

KH_EXPORT int khk_gdn_decode_qk4_v8_d128_k_last(const DLTensor* t, int32_t num_tensors,
                                                void* stream, void* /*workspace*/,
                                                uint64_t /*workspace_bytes*/) {
  using namespace khk::gdn_decode;
  if (num_tensors != kCount || t[kQ].ndim != 4)
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "expected 11 tensors (q k v state A_log a dt_bias b scale output new_state) with q "
                "of shape [B, 1, 4, 128]");
  const int64_t B = t[kQ].shape[0];
  if (B < 0) return fail(KH_ERROR_INVALID_ARGUMENT, "q has a negative batch size");
  if (!has_layout(t[kQ], kDLBfloat, 16, {B, 1, kQKHeads, kHeadSize}) ||
      !has_layout(t[kK], kDLBfloat, 16, {B, 1, kQKHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "q and k must be compact bf16 [B, 1, 4, 128]");
  if (!has_layout(t[kV], kDLBfloat, 16, {B, 1, kVHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "v must be compact bf16 [B, 1, 8, 128]");
  if (t[kState].data && !has_layout(t[kState], kDLFloat, 32, {B, kVHeads, kHeadSize, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "state must be absent or compact f32 [B, 8, 128, 128]");
  if (!has_layout(t[kALog], kDLFloat, 32, {kVHeads}) ||
      !has_layout(t[kDtBias], kDLFloat, 32, {kVHeads}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "A_log and dt_bias must be f32 [8]");
  if (!has_layout(t[kA], kDLBfloat, 16, {B, 1, kVHeads}) ||
      !has_layout(t[kB], kDLBfloat, 16, {B, 1, kVHeads}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "a and b must be bf16 [B, 1, 8]");
  if (t[kScale].data && !has_layout(t[kScale], kDLFloat, 32, {}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "scale must be a 0-d f32 host tensor");
  if (!has_layout(t[kOutput], kDLBfloat, 16, {B, 1, kVHeads, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "output must be compact bf16 [B, 1, 8, 128]");
  if (!has_layout(t[kNewState], kDLFloat, 32, {B, kVHeads, kHeadSize, kHeadSize}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "new_state must be compact f32 [B, 8, 128, 128]");

  DecodeArgs args;
  args.q = data_of<const __nv_bfloat16>(t[kQ]);
  args.k = data_of<const __nv_bfloat16>(t[kK]);
  args.v = data_of<const __nv_bfloat16>(t[kV]);
  args.state = data_of<const float>(t[kState]);
  args.A_log = data_of<const float>(t[kALog]);
  args.a = data_of<const __nv_bfloat16>(t[kA]);
  args.dt_bias = data_of<const float>(t[kDtBias]);
  args.b = data_of<const __nv_bfloat16>(t[kB]);
  // scale is a 0-d host tensor; 0 (or absent) means 1/sqrt(head_size), as in the reference.
  const float scale = t[kScale].data ? *data_of<const float>(t[kScale]) : 0.0f;
  args.scale = scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(kHeadSize)) : scale;
  args.output = data_of<__nv_bfloat16>(t[kOutput]);
  args.new_state = data_of<float>(t[kNewState]);
  args.batch = B;
  // The route reads q and k 8 bytes at a time and the state 16 bytes at a time.
  if ((args.state && !aligned(args.state, 16)) || !aligned(args.new_state, 16) ||
      !aligned(args.q, 8) || !aligned(args.k, 8))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "state and new_state must be 16-byte aligned, q and k 8-byte aligned");
  if (B == 0) return KH_OK;
  if (B > kMaxBatch)
    return fail(KH_ERROR_INVALID_ARGUMENT, "batch_size above 4194304 is not supported");

  if (dispatch(args, static_cast<cudaStream_t>(stream)) != cudaSuccess)
    return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT const char* khk_gdn_decode_qk4_v8_d128_k_last_error() {
  return khk::gdn_decode::t_error;
}
