// The micro-kernels `kh ceilings` times: a vectorised copy, an empty kernel, a dependent gather
// chain and an FMA stream. Host launchers on a given stream; no synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace kh::probe {

/// Copies `bytes` (a multiple of 16, 16-byte aligned) with 16-byte loads and stores.
void launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);
void launch_empty(cudaStream_t stream);
/// One thread follows `hops` links of `table` (each entry the index of the next) from 0 and
/// stores where it ends in *end: every load waits for the previous one.
void launch_gather_chain(const std::uint32_t* table, int hops, std::uint32_t* end,
                         cudaStream_t stream);
/// Independent fp32 FMA chains on every SM; returns the FLOPs one launch performs.
double launch_fma(float* sink, int sm_count, cudaStream_t stream);

}  // namespace kh::probe
