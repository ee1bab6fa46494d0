// The entry's view of the route.
#pragma once

#include <cuda_runtime.h>

#include "dsa_attention.cuh"

namespace khk::dsa_attention {

/// Launches the attention on `stream`, splitting each token's slots over a cluster of as many
/// CTAs as the token count allows (tuning.h). Needs no workspace. Returns the launch's error.
cudaError_t dispatch(const AttentionArgs& args, cudaStream_t stream);

}  // namespace khk::dsa_attention
