// The entry's view of the routes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "dsa_attention.cuh"

namespace khk::dsa_attention {

/// The workspace a call with `tokens` tokens uses at most: the split route's partial results.
uint64_t workspace_bytes(int64_t tokens);

/// Launches the attention on `stream`, splitting each token's slots over as many CTAs as the
/// token count calls for and `workspace_bytes` allows (none: one CTA per token). Returns the
/// launches' error.
cudaError_t dispatch(const AttentionArgs& args, void* workspace, uint64_t workspace_bytes,
                     cudaStream_t stream);

}  // namespace khk::dsa_attention
