// CUDA builtins for kernel bodies compiled by the host compiler and run by the CTA emulator
// (cta_emulator.h): threadIdx and blockIdx of the running fiber, __syncthreads, __syncwarp, the
// float shuffles and a few integer warp collectives. The warp-collective PTX a kernel wraps
// (mma.sync, ldmatrix) it declares in namespace khk_host for host builds
// (kernels/gdn_prefill/mma_tiles.cuh); cuda_on_host.cpp defines them on publish / peer. Include
// this before the kernel's headers, and give the kernel's `extern __shared__` array a definition
// in the test (one buffer: the emulator runs one CTA at a time) passed to the CtaEmulator.
#pragma once

#if defined(__CUDACC__)
#error "cuda_on_host.h is for the host compiler; nvcc has the real builtins"
#endif

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "cta_emulator.h"

#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace kh::test::cuda_on_host {

inline uint3 thread_idx() {
  return make_uint3(static_cast<unsigned>(EmulatedCta::current().thread()), 0, 0);
}
inline uint3 block_idx() {
  return make_uint3(static_cast<unsigned>(EmulatedCta::current().block()), 0, 0);
}

/// __shfl_up_sync of any 4-byte value: lane l gets lane l - delta's x, or its own below delta.
template <class T>
T shfl_up(T x, unsigned delta) {
  auto& cta = EmulatedCta::current();
  cta.publish(x);
  const int lane = cta.lane(), from = lane - static_cast<int>(delta);
  const T r = from >= 0 ? cta.peer<T>(from) : x;
  cta.done();
  return r;
}

}  // namespace kh::test::cuda_on_host

#define threadIdx (::kh::test::cuda_on_host::thread_idx())
#define blockIdx (::kh::test::cuda_on_host::block_idx())

inline void __syncthreads() { kh::test::EmulatedCta::current().sync(); }
inline void __syncwarp(unsigned = 0xffffffffu) { kh::test::EmulatedCta::current().sync_warp(); }

inline float __shfl_sync(unsigned, float x, int src_lane, int = 32) {
  auto& cta = kh::test::EmulatedCta::current();
  cta.publish(x);
  const float r = cta.peer<float>(src_lane & 31);
  cta.done();
  return r;
}

inline float __shfl_up_sync(unsigned, float x, unsigned delta, int = 32) {
  return kh::test::cuda_on_host::shfl_up(x, delta);
}

inline float __shfl_xor_sync(unsigned, float x, int lane_mask, int = 32) {
  return kh::test::EmulatedCta::current().shfl_xor(x, lane_mask);
}

inline float __uint_as_float(unsigned x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

inline unsigned __float_as_uint(float f) {
  unsigned x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

// The integer warp collectives of the DSA split route's compaction (route_split_kv.cuh).
inline int __shfl_up_sync(unsigned, int x, unsigned delta, int = 32) {
  return kh::test::cuda_on_host::shfl_up(x, delta);
}

inline unsigned __ballot_sync(unsigned, int predicate) {
  auto& cta = kh::test::EmulatedCta::current();
  cta.publish(predicate != 0);
  unsigned bits = 0;
  for (int lane = 0; lane < 32; ++lane) bits |= cta.peer<bool>(lane) ? 1u << lane : 0u;
  cta.done();
  return bits;
}

inline int __reduce_add_sync(unsigned, int x) {
  auto& cta = kh::test::EmulatedCta::current();
  cta.publish(x);
  int sum = 0;
  for (int lane = 0; lane < 32; ++lane) sum += cta.peer<int>(lane);
  cta.done();
  return sum;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }

// CUDA's min and max (device code calls them unqualified): both arguments of one type, so a call
// the device would resolve to another overload fails to compile here instead of narrowing.
template <class T>
inline T min(T a, T b) {
  return a < b ? a : b;
}
template <class T>
inline T max(T a, T b) {
  return a > b ? a : b;
}
