// The value of element i of a random tensor under FlashInfer-Bench's distributions
// (fib_eval_spec §2.2), shared by the host and device generators: floats N(0,1); fp8 and fp4
// N(0,1) clamped to [-2, 2]; bool a coin; int8 uniform on [-128, 127]; uint8 on [0, 255]; other
// integers uniform on [-1024, 1023].
#pragma once

#include <cstdint>

#include "kh/core/dtype.h"
#include "kh/core/host_device.h"
#include "kh/gen/random_stream.h"

namespace kh {

KH_HD double official_random_value(const RandomStream& stream, DType t, std::int64_t i) {
  switch (t) {
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
    case DType::kFloat4E2M1: {
      const double x = stream.normal(i);
      return x < -2.0 ? -2.0 : (x > 2.0 ? 2.0 : x);
    }
    case DType::kBool:
      return stream.coin(i) ? 1.0 : 0.0;
    case DType::kInt8:
      return static_cast<double>(stream.uniform_int(i, -128, 127));
    case DType::kUInt8:
      return static_cast<double>(stream.uniform_int(i, 0, 255));
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return static_cast<double>(stream.uniform_int(i, -1024, 1023));
    default:
      return stream.normal(i);
  }
}

}  // namespace kh
