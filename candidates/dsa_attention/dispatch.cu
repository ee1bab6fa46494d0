// Route choice for DSA sparse attention. One route today (split-KV, route_split_kv.cuh, with
// merge_splits.cuh behind it when a token has more than one split: in the same cooperative launch
// for at most kFusedMaxTokens tokens, else as a second kernel). The split count comes from
// the token count alone, by the continuous rule in tuning.h, and is capped by the workspace the
// caller gave; nothing depends on exact shapes, pointer values or the indices' contents (only
// known on the device), and nothing synchronises, so the call stays CUDA-graph capturable.
#include <algorithm>
#include <atomic>

#include "dispatch.h"
#include "merge_splits.cuh"
#include "route_split_kv.cuh"
#include "tuning.h"

namespace khk::dsa_attention {
namespace {

constexpr int kMaxDevices = 64;
constexpr uint64_t kPartialBytesPerSplit = uint64_t{kHeads} * (kCkvDim * sizeof(float) + sizeof(float2));

// The current device's SM count, asked once per device (0 when the runtime cannot say).
int sm_count() {
  static std::atomic<int> known[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    return 0;
  }
  int sms = known[device].load(std::memory_order_relaxed);
  if (sms == 0) {
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    known[device].store(sms, std::memory_order_relaxed);
  }
  return sms;
}

// The split kernel's shared memory exceeds the 48 KiB default: opt in once per device (for the
// most it takes, with one split per token).
cudaError_t allow_split_smem() {
  static std::atomic<bool> done[kMaxDevices] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return cudaGetLastError();
  if (device >= 0 && device < kMaxDevices && done[device].load(std::memory_order_relaxed))
    return cudaSuccess;
  cudaError_t e = cudaFuncSetAttribute(split_kv_attention<false>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       split_smem_bytes(1));
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(split_kv_attention<true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, split_smem_bytes(1));
  if (e == cudaSuccess && device >= 0 && device < kMaxDevices)
    done[device].store(true, std::memory_order_relaxed);
  return e;
}

uint64_t partial_bytes(int64_t tokens, int splits) {
  return static_cast<uint64_t>(tokens) * splits * kPartialBytesPerSplit;
}

// The most splits that keep T x splits CTAs within one wave (one CTA per SM: its shared memory
// is most of the SM's), at most kMaxSplits and at least 1.
int wanted_splits(int64_t tokens) {
  const int64_t sms = std::max(sm_count(), 1);
  return static_cast<int>(std::clamp<int64_t>(sms / tokens, 1, kMaxSplits));
}

}  // namespace

uint64_t workspace_bytes(int64_t tokens) {
  if (tokens <= 0) return 0;
  const int splits = wanted_splits(tokens);
  return splits > 1 ? partial_bytes(tokens, splits) : 0;
}

cudaError_t dispatch(const AttentionArgs& args, void* workspace, uint64_t bytes,
                     cudaStream_t stream) {
  int splits = wanted_splits(args.tokens);
  // Fewer splits where the workspace is short (or absent, or not 16-byte aligned): one split per
  // token needs none.
  if (!workspace || reinterpret_cast<uintptr_t>(workspace) % 16 != 0) bytes = 0;
  const uint64_t per_split = partial_bytes(args.tokens, 1);
  splits = static_cast<int>(std::min<uint64_t>(splits, bytes / per_split));
  if (splits < 2) splits = 1;

  SplitPartials partials{};
  if (splits > 1) {
    partials.o = static_cast<float*>(workspace);
    partials.ml = reinterpret_cast<float2*>(static_cast<char*>(workspace) +
                                            partial_bytes(args.tokens, splits) -
                                            args.tokens * splits * kHeads * sizeof(float2));
  }
  if (const cudaError_t e = allow_split_smem(); e != cudaSuccess) return e;
  const unsigned ctas = static_cast<unsigned>(args.tokens * splits);
  if (splits > 1 && args.tokens <= kFusedMaxTokens) {
    // T x splits is within one CTA per SM, so the whole grid is resident at once, as the grid
    // barrier needs; the cooperative launch makes the driver guarantee it. Shared memory for a
    // whole token's rows: one CTA may take them all.
    cudaLaunchConfig_t fused{};
    fused.gridDim = dim3(ctas);
    fused.blockDim = dim3(kThreads);
    fused.dynamicSmemBytes = split_smem_bytes(1);
    fused.stream = stream;
    cudaLaunchAttribute cooperative{};
    cooperative.id = cudaLaunchAttributeCooperative;
    cooperative.val.cooperative = 1;
    fused.attrs = &cooperative;
    fused.numAttrs = 1;
    const cudaError_t e =
        cudaLaunchKernelEx(&fused, split_kv_attention<true>, args, partials, splits);
    if (e != cudaErrorCooperativeLaunchTooLarge) return e;
    cudaGetLastError();  // fewer SMs than the device has (MPS): the two-kernel route instead
  }
  split_kv_attention<false><<<ctas, kThreads, split_smem_bytes(splits), stream>>>(args, partials,
                                                                                 splits);
  if (splits == 1) return cudaGetLastError();
  cudaLaunchConfig_t merge{};
  merge.gridDim = dim3(static_cast<unsigned>(args.tokens * kHeads * kMergeCtasPerHead));
  merge.blockDim = dim3(kMergeThreads);
  merge.stream = stream;
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  merge.attrs = &early;
  merge.numAttrs = kMergePdl ? 1 : 0;
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return cudaLaunchKernelEx(&merge, merge_splits, args, partials, splits);
}

}  // namespace khk::dsa_attention
