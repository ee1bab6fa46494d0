// Compiles the host/device-shared code (number formats, Philox, normal draws) for sm_90a, so a
// change that breaks the GPU side of "same bits on host and device" fails CI without a GPU.
#include <cstdint>

#include "kh/core/minifloat.h"
#include "kh/gen/random_stream.h"

namespace {

__global__ void draw_inputs(kh::RandomStream stream, std::int64_t n, std::uint16_t* bf16,
                            std::uint8_t* e4m3, std::int32_t* ints) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = static_cast<float>(stream.normal(i));
  bf16[i] = kh::float_to_bf16_bits(x);
  e4m3[i] = kh::float_to_e4m3(x);
  ints[i] = static_cast<std::int32_t>(stream.uniform_int(i, -1024, 1023));
}

}  // namespace

// Referenced so the kernel is emitted.
void kh_device_compile_check_launch(kh::RandomStream s, std::int64_t n, std::uint16_t* a,
                                    std::uint8_t* b, std::int32_t* c) {
  draw_inputs<<<static_cast<unsigned>((n + 255) / 256), 256>>>(s, n, a, b, c);
}
