// The entry's view of the routes.
#pragma once

#include <cuda_runtime.h>

#include "gdn_prefill.cuh"

namespace khk::gdn_prefill {

/// Launches the prefill on `stream` by the route and launch shape the batch calls for. Returns
/// the launch's error.
cudaError_t dispatch(const PrefillArgs& args, cudaStream_t stream);

}  // namespace khk::gdn_prefill
