// The entry's view of the routes.
#pragma once

#include <cuda_runtime.h>

#include "gdn_decode.cuh"

namespace khk::gdn_decode {

/// Launches the decode step on `stream` by the route and launch shape its batch size calls for.
/// Returns the launch's error.
cudaError_t dispatch(const DecodeArgs& args, cudaStream_t stream);

}  // namespace khk::gdn_decode
