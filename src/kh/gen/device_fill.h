// Input generation on the GPU: fills device memory with the same bits as the host generator
// (fill_official), so large inputs need not cross PCIe. Available when kh is built with CUDA.
#pragma once

#include <cstdint>

#include "kh/core/dtype.h"
#include "kh/gen/draw_recipe.h"
#include "kh/gen/random_stream.h"

namespace kh {

/// Fills elements [0, n) of `device_data` with the official distribution of dtype t, on
/// `cuda_stream` (a cudaStream_t; null for the default stream). Throws kh::Error without CUDA.
void fill_official_on_device(void* device_data, DType t, std::int64_t n, RandomStream stream,
                             void* cuda_stream);

/// Draws a whole tensor of n elements of dtype t with the recipe, on `cuda_stream`, giving the
/// bits of draw() on the host. Throws kh::Error without CUDA.
void draw_on_device(const DrawRecipe& recipe, void* device_data, DType t, std::int64_t n,
                    void* cuda_stream);

}  // namespace kh
