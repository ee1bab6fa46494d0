// Writing one element of any kh dtype from a double, shared by host tensors and device fills so
// both round the same way: floats through float32 (round to nearest even) into their format,
// integers by truncation toward zero, bool as v != 0. float4_e2m1 packs two elements per byte;
// callers writing it from several threads must give each thread whole bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kh/core/dtype.h"
#include "kh/core/host_device.h"
#include "kh/core/minifloat.h"

namespace kh {

KH_HD void store_element(void* base, DType t, std::int64_t i, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::kFloat64:
      static_cast<double*>(base)[i] = v;
      break;
    case DType::kFloat32:
      static_cast<float*>(base)[i] = f;
      break;
    case DType::kFloat16:
      static_cast<std::uint16_t*>(base)[i] = float_to_f16_bits(f);
      break;
    case DType::kBFloat16:
      static_cast<std::uint16_t*>(base)[i] = float_to_bf16_bits(f);
      break;
    case DType::kFloat8E4M3:
      static_cast<std::uint8_t*>(base)[i] = float_to_e4m3(f);
      break;
    case DType::kFloat8E5M2:
      static_cast<std::uint8_t*>(base)[i] = float_to_e5m2(f);
      break;
    case DType::kFloat4E2M1: {
      std::uint8_t& pair = static_cast<std::uint8_t*>(base)[i / 2];
      const std::uint8_t code = float_to_e2m1(f);
      pair = static_cast<std::uint8_t>(i % 2 ? (pair & 0x0f) | (code << 4) : (pair & 0xf0) | code);
      break;
    }
    case DType::kInt64:
      static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(v);
      break;
    case DType::kInt32:
      static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(v);
      break;
    case DType::kInt16:
      static_cast<std::int16_t*>(base)[i] = static_cast<std::int16_t>(v);
      break;
    case DType::kInt8:
      static_cast<std::int8_t*>(base)[i] = static_cast<std::int8_t>(v);
      break;
    case DType::kUInt8:
      static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(v);
      break;
    case DType::kBool:
      static_cast<std::uint8_t*>(base)[i] = v != 0.0;
      break;
  }
}

}  // namespace kh
