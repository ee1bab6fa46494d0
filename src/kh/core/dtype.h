// Element types of FlashInfer-Bench tensors, with their names in the three formats kh speaks:
// FlashInfer-Bench JSON ("bfloat16"), safetensors ("BF16") and DLPack ({kDLBfloat, 16, 1}).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <dlpack/dlpack.h>

namespace kh {

enum class DType : std::uint8_t {
  kFloat64,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat8E4M3,
  kFloat8E5M2,
  kFloat4E2M1,  // stored as packed pairs (torch float4_e2m1fn_x2): one byte per two elements
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
};

inline constexpr DType kAllDTypes[] = {
    DType::kFloat64,    DType::kFloat32,    DType::kFloat16, DType::kBFloat16, DType::kFloat8E4M3,
    DType::kFloat8E5M2, DType::kFloat4E2M1, DType::kInt64,   DType::kInt32,    DType::kInt16,
    DType::kInt8,       DType::kUInt8,      DType::kBool};

/// FlashInfer-Bench name, e.g. "float8_e4m3fn".
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

/// safetensors header name, e.g. "F8_E4M3".
std::string_view safetensors_dtype_name(DType t);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);

DLDataType dlpack_dtype(DType t);

/// Bytes per element; float4_e2m1 reports 1 and is stored packed by pairs (see storage_bytes).
std::size_t dtype_size(DType t);
/// Bytes needed to store numel elements of this type.
std::size_t storage_bytes(DType t, std::int64_t numel);

bool is_floating(DType t);
bool is_integer(DType t);  // signed or unsigned integers; bool is neither

}  // namespace kh
