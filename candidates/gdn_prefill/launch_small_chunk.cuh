// The plain small-chunk route's launch: which pipeline (the CTA barrier per iteration of
// route_small_chunk.cuh, or the decoupled roles of route_small_chunk_decoupled.cuh where the CTA
// has four producers and SMALL_DECOUPLED asks) and which order of the sequences (index, or longest
// first: sequence_order.cuh). The persistent and context-parallel launches choose the same way.
#pragma once

#include <cuda_runtime.h>

#include "route_small_chunk.cuh"
#include "route_small_chunk_decoupled.cuh"
#include "tuning.h"

namespace khk::gdn_prefill {

#if defined(__CUDACC__)  // a host build (the tests' CTA emulator) runs the kernel bodies itself
/// `ctas` CTAs of kRowWarps groups of 16 value rows and kProducers producer warps, the sequences
/// longest first where launch_small_chunk asks; with kKeyParts > 1 (decoupled narrow CTAs only)
/// each group's chain split by keys over that many warps, their exchange after SmallSmem. The
/// opt-in to more than 48 KB of shared memory is set on every call, as the other routes do.
template <int kRowWarps, int kProducers, bool kLongestFirst, int kKeyParts = 1>
cudaError_t launch_small_chunk_ordered(const PrefillArgs& args, int64_t ctas,
                                       cudaStream_t stream) {
  constexpr bool kDecoupled = kSmallDecoupled && kProducers == 4;
  static_assert(kKeyParts == 1 || (kDecoupled && kRowWarps == 2), "decoupled narrow CTAs only");
  using Roles = SmallRoles<kRowWarps, kProducers, kKeyParts>;
  constexpr int bytes =
      kKeyParts > 1
          ? kSmallKeySplitOffset + static_cast<int>(sizeof(SmallKeySplitSmem<kKeyParts>))
          : static_cast<int>(sizeof(SmallSmem));
  const auto kernel = [] {
    if constexpr (kDecoupled)
      return small_chunk_decoupled_kernel<kRowWarps, kLongestFirst, kKeyParts>;
    else return small_chunk_kernel<kRowWarps, kProducers, kLongestFirst>;
  }();
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) return e;
  kernel<<<static_cast<unsigned>(ctas), Roles::kThreads, bytes, stream>>>(args);
  return cudaGetLastError();
}

template <int kRowWarps, int kProducers>
cudaError_t launch_small_chunk(const PrefillArgs& args, cudaStream_t stream) {
  const int64_t ctas = args.num_seqs * kVHeads * SmallRoles<kRowWarps, kProducers>::kTilesPerHead;
  if (ctas > 0x7fffffff) return cudaErrorInvalidConfiguration;
  // The wide CTAs (one per SM) take the sequences longest first from kSmallRankMinCtas CTAs; the
  // narrow ones, which share SMs, only past kSmallRankNarrowMinCtas, more than fit at once: below,
  // the order would also decide which chains share an SM (tuning.h).
  if constexpr (kRowWarps == 8) {
    if (args.num_seqs > 1 && ctas >= kSmallRankMinCtas)
      return launch_small_chunk_ordered<kRowWarps, kProducers, true>(args, ctas, stream);
  } else if constexpr (kProducers == 2) {  // four producers: at most kSmallFourProducerCtas
    if (args.num_seqs > 1 && ctas >= kSmallRankNarrowMinCtas)
      return launch_small_chunk_ordered<kRowWarps, kProducers, true>(args, ctas, stream);
  } else if constexpr (kSmallDecoupled && kSmallKeyParts > 1) {
    // The key-split CTAs hold one SM's registers each (tuning.h, SMALL_KEY_SPLIT_MAX_CTAS).
    if (ctas <= kSmallKeySplitMaxCtas)
      return launch_small_chunk_ordered<kRowWarps, kProducers, false, kSmallKeyParts>(args, ctas,
                                                                                      stream);
  }
  return launch_small_chunk_ordered<kRowWarps, kProducers, false>(args, ctas, stream);
}
#endif

}  // namespace khk::gdn_prefill
