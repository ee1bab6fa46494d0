// The C ABI entry of DSA sparse attention (kh candidate ABI, include/kh/abi.h): checks the DLPack
// tensors against the definition, resolves sm_scale, and hands the call to the dispatch. It
// allocates nothing, never synchronises and reads only host memory (the 0-d sm_scale), so the
// call is CUDA-graph capturable. It also reports the workspace it wants (the split route's
// partials); given less, it splits less.
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "dispatch.h"
#include "dsa_attention.cuh"
#include "kh/abi.h"

namespace khk::dsa_attention {
namespace {

// q_nope q_pe ckv_cache kpe_cache sparse_indices sm_scale | output lse
enum Tensor { kQNope, kQPe, kCkv, kKpe, kIndices, kScale, kOutput, kLse, kCount };

// Grids hold tokens x splits (at most 256) CTAs, and tokens x 32 merge CTAs: within 2^31 - 1.
constexpr int64_t kMaxTokens = int64_t{1} << 22;

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
}  // namespace khk::dsa_attention

KH_EXPORT int khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64(
    const DLTensor* t, int32_t num_tensors, void* stream, void* workspace,
    uint64_t workspace_bytes) {
  using namespace khk::dsa_attention;
  if (num_tensors != kCount || t[kQNope].ndim != 3 || t[kCkv].ndim != 3)
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "expected 8 tensors (q_nope q_pe ckv_cache kpe_cache sparse_indices sm_scale "
                "output lse) with q_nope [T, 16, 512] and ckv_cache [num_pages, 64, 512]");
  const int64_t T = t[kQNope].shape[0], pages = t[kCkv].shape[0];
  if (T < 0 || pages < 0)
    return fail(KH_ERROR_INVALID_ARGUMENT, "negative num_tokens or num_pages");
  if (!has_layout(t[kQNope], kDLBfloat, 16, {T, kHeads, kCkvDim}) ||
      !has_layout(t[kQPe], kDLBfloat, 16, {T, kHeads, kKpeDim}))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "q_nope and q_pe must be compact bf16 [T, 16, 512] and [T, 16, 64]");
  if (!has_layout(t[kCkv], kDLBfloat, 16, {pages, kPageSize, kCkvDim}) ||
      !has_layout(t[kKpe], kDLBfloat, 16, {pages, kPageSize, kKpeDim}))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "ckv_cache and kpe_cache must be compact bf16 [num_pages, 64, 512] and "
                "[num_pages, 64, 64]");
  if (!has_layout(t[kIndices], kDLInt, 32, {T, kTopK}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "sparse_indices must be compact int32 [T, 2048]");
  if (!t[kScale].data || !has_layout(t[kScale], kDLFloat, 32, {}))
    return fail(KH_ERROR_INVALID_ARGUMENT, "sm_scale must be a 0-d f32 host tensor");
  if (!has_layout(t[kOutput], kDLBfloat, 16, {T, kHeads, kCkvDim}) ||
      !has_layout(t[kLse], kDLFloat, 32, {T, kHeads}))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "output must be compact bf16 [T, 16, 512] and lse compact f32 [T, 16]");

  AttentionArgs args;
  args.q_nope = data_of<const __nv_bfloat16>(t[kQNope]);
  args.q_pe = data_of<const __nv_bfloat16>(t[kQPe]);
  args.ckv = data_of<const __nv_bfloat16>(t[kCkv]);
  args.kpe = data_of<const __nv_bfloat16>(t[kKpe]);
  args.indices = data_of<const int32_t>(t[kIndices]);
  args.scale_log2 = *data_of<const float>(t[kScale]) * kLog2e;
  args.output = data_of<__nv_bfloat16>(t[kOutput]);
  args.lse = data_of<float>(t[kLse]);
  args.tokens = T;
  args.cache_rows = pages * kPageSize;
  // Rows and queries travel in 16-byte pieces, the output in 8-byte quads (the merge).
  if (!aligned(args.q_nope, 16) || !aligned(args.q_pe, 16) || !aligned(args.ckv, 16) ||
      !aligned(args.kpe, 16) || !aligned(args.output, 8))
    return fail(KH_ERROR_INVALID_ARGUMENT,
                "q_nope, q_pe, ckv_cache and kpe_cache must be 16-byte aligned, output 8-byte");
  if (T == 0) return KH_OK;
  if (T > kMaxTokens)
    return fail(KH_ERROR_INVALID_ARGUMENT, "num_tokens above 4194304 is not supported");

  if (dispatch(args, workspace, workspace_bytes, static_cast<cudaStream_t>(stream)) != cudaSuccess)
    return fail(KH_ERROR_LAUNCH, "kernel launch failed");
  return KH_OK;
}

KH_EXPORT uint64_t khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64_workspace_bytes(
    const DLTensor* t, int32_t num_tensors) {
  using namespace khk::dsa_attention;
  if (num_tensors != kCount || t[kQNope].ndim != 3 || t[kQNope].shape[0] <= 0) return 0;
  return workspace_bytes(t[kQNope].shape[0]);
}

KH_EXPORT const char* khk_dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64_error() {
  return khk::dsa_attention::t_error;
}
