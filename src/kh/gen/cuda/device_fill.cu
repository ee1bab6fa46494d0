// Device side of input generation. Compiled with --fmad=false: the generator's arithmetic must
// not be contracted into fused multiply-adds, or its bits would differ from the host's.
#include <cuda_runtime_api.h>

#include "kh/core/element_codec.h"
#include "kh/core/error.h"
#include "kh/gen/device_fill.h"
#include "kh/gen/draw_recipe.h"
#include "kh/gen/official_value.h"

namespace kh {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;

__global__ void fill_official_kernel(void* data, DType t, std::int64_t n, RandomStream stream) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  if (t == DType::kFloat4E2M1) {  // one thread per byte: both halves of a packed pair
    for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
         b < (n + 1) / 2; b += stride)
      for (std::int64_t i = 2 * b; i < 2 * b + 2 && i < n; ++i)
        store_element(data, t, i, official_random_value(stream, t, i));
    return;
  }
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride)
    store_element(data, t, i, official_random_value(stream, t, i));
}

__global__ void draw_kernel(DrawRecipe recipe, void* data, DType t, std::int64_t n,
                            std::int64_t units) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t u = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       u < units; u += stride)
    draw_unit(recipe, t, data, n, u);
}

void check_launch() {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) fail("device input generation: launch failed: {}", cudaGetErrorString(e));
}

}  // namespace

void draw_on_device(const DrawRecipe& recipe, void* device_data, DType t, std::int64_t n,
                    void* cuda_stream) {
  if (recipe.kind == DrawKind::kOfficial) {
    fill_official_on_device(device_data, t, n, recipe.stream, cuda_stream);
    return;
  }
  if (t == DType::kFloat4E2M1) fail("device input generation: fp4 takes official draws only");
  if (recipe.kind == DrawKind::kUnitVectors &&
      (recipe.group <= 0 || recipe.group > kMaxUnitVector || n % recipe.group != 0))
    fail("unit vectors of {} elements do not tile a tensor of {}", recipe.group, n);
  const std::int64_t units = draw_units(recipe, n);
  if (units <= 0) return;
  const std::int64_t blocks = std::min<std::int64_t>(kMaxBlocks, (units + kThreads - 1) / kThreads);
  draw_kernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                static_cast<cudaStream_t>(cuda_stream)>>>(recipe, device_data, t, n, units);
  check_launch();
}

void fill_official_on_device(void* device_data, DType t, std::int64_t n, RandomStream stream,
                             void* cuda_stream) {
  if (n <= 0) return;
  const std::int64_t blocks = std::min<std::int64_t>(kMaxBlocks, (n + kThreads - 1) / kThreads);
  fill_official_kernel<<<static_cast<unsigned>(blocks), kThreads, 0,
                         static_cast<cudaStream_t>(cuda_stream)>>>(device_data, t, n, stream);
  check_launch();
}

}  // namespace kh
