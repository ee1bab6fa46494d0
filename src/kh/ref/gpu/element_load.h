// Reading the low-precision element types of the contest operators in reference code that runs
// on both the host (emulation) and the device. Conversions are exact (every bf16 and e4m3 value
// is a float), so both sides read the same numbers; the device uses the hardware conversion
// because a software decode per multiply-add would dominate the MoE reference.
#pragma once

#include <cstdint>

#include "kh/core/host_device.h"
#include "kh/core/minifloat.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace kh::gpuref {

KH_HD float load_bf16(const std::uint16_t* p, std::int64_t i) {
  return bits_float(static_cast<std::uint32_t>(p[i]) << 16);
}

KH_HD float load_e4m3(const std::uint8_t* p, std::int64_t i) {
#if defined(__CUDA_ARCH__)
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(p[i], __NV_E4M3)));
#else
  return e4m3_to_float(p[i]);
#endif
}

KH_HD void store_bf16(std::uint16_t* p, std::int64_t i, float v) {
  p[i] = float_to_bf16_bits(v);
}

}  // namespace kh::gpuref
