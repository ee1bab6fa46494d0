// Route choice for DSA sparse attention. One route (split-KV, route_split_kv.cuh), whose split
// count comes from the token count alone: the most splits, at most kMaxSplits, whose clusters for
// every token fit on the GPU at once, as the runtime's occupancy calculator says for this kernel
// (asked once per device and cluster size). Nothing depends on exact shapes, pointer values or the
// indices' contents (only known on the device), and nothing synchronises, so the call stays
// CUDA-graph capturable.
#include <atomic>

#include "dispatch.h"
#include "route_split_kv.cuh"
#include "tuning.h"

namespace khk::dsa_attention {
namespace {

constexpr int kMaxDevices = 64;

// Per device: how many clusters of s CTAs can be resident at once, for s = 1..kMaxSplits
// (capacity[0] != 0 once known). The kernel's attributes (its shared memory above the 48 KiB
// default, cluster sizes above the portable 8) are set on the same first call.
struct ClusterCapacity {
  std::atomic<int> clusters[kMaxSplits + 1] = {};
};
ClusterCapacity g_capacity[kMaxDevices];

cudaLaunchConfig_t launch_config(int64_t tokens, int splits, cudaStream_t stream,
                                 cudaLaunchAttribute* cluster) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(tokens * splits));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = split_smem_bytes(splits);
  config.stream = stream;
  cluster->id = cudaLaunchAttributeClusterDimension;
  cluster->val.clusterDim.x = static_cast<unsigned>(splits);
  cluster->val.clusterDim.y = 1;
  cluster->val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = splits > 1 ? 1 : 0;
  return config;
}

cudaError_t learn_capacity(ClusterCapacity& known) {
  if (cudaError_t e = cudaFuncSetAttribute(split_kv_attention,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           split_smem_bytes(1));
      e != cudaSuccess)
    return e;
  if (kMaxSplits > 8) {
    if (cudaError_t e = cudaFuncSetAttribute(
            split_kv_attention, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        e != cudaSuccess)
      return e;
  }
  for (int s = kMaxSplits; s >= 1; --s) {
    cudaLaunchAttribute cluster{};
    const cudaLaunchConfig_t config = launch_config(s, s, nullptr, &cluster);
    int clusters = 0;
    if (s == 1) {
      int per_sm = 0, device = 0, sms = 0;
      if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
              &per_sm, split_kv_attention, kThreads, split_smem_bytes(1));
          e != cudaSuccess)
        return e;
      if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
      if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
          e != cudaSuccess)
        return e;
      clusters = per_sm * sms;
    } else if (cudaOccupancyMaxActiveClusters(&clusters, split_kv_attention, &config) !=
               cudaSuccess) {
      cudaGetLastError();  // a size this device cannot schedule: none fit
      clusters = 0;
    }
    known.clusters[s].store(clusters, std::memory_order_relaxed);
  }
  known.clusters[0].store(1, std::memory_order_release);
  return cudaSuccess;
}

// The most splits whose clusters for all `tokens` are resident at once; 1 when even single CTAs
// take more than one wave.
int splits_for(const ClusterCapacity& known, int64_t tokens) {
  for (int s = kMaxSplits; s > 1; --s)
    if (known.clusters[s].load(std::memory_order_relaxed) >= tokens) return s;
  return 1;
}

}  // namespace

cudaError_t dispatch(const AttentionArgs& args, cudaStream_t stream) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (device < 0 || device >= kMaxDevices) return cudaErrorInvalidDevice;
  ClusterCapacity& known = g_capacity[device];
  if (known.clusters[0].load(std::memory_order_acquire) == 0) {
    if (cudaError_t e = learn_capacity(known); e != cudaSuccess) return e;
  }
  const int splits = splits_for(known, args.tokens);
  cudaLaunchAttribute cluster{};
  const cudaLaunchConfig_t config = launch_config(args.tokens, splits, stream, &cluster);
  return cudaLaunchKernelEx(&config, split_kv_attention, args, splits);
}

}  // namespace khk::dsa_attention
