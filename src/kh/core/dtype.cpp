#include "kh/core/dtype.h"

namespace kh {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view fib_name;
  std::string_view safetensors_name;
  DLDataType dlpack;
  std::size_t size;
};

// One row per type: the single place that ties the three naming schemes together.
constexpr DTypeInfo kInfo[] = {
    {DType::kFloat64, "float64", "F64", {kDLFloat, 64, 1}, 8},
    {DType::kFloat32, "float32", "F32", {kDLFloat, 32, 1}, 4},
    {DType::kFloat16, "float16", "F16", {kDLFloat, 16, 1}, 2},
    {DType::kBFloat16, "bfloat16", "BF16", {kDLBfloat, 16, 1}, 2},
    {DType::kFloat8E4M3, "float8_e4m3fn", "F8_E4M3", {kDLFloat8_e4m3fn, 8, 1}, 1},
    {DType::kFloat8E5M2, "float8_e5m2", "F8_E5M2", {kDLFloat8_e5m2, 8, 1}, 1},
    {DType::kFloat4E2M1, "float4_e2m1", "F4", {kDLFloat4_e2m1fn, 4, 1}, 1},
    {DType::kInt64, "int64", "I64", {kDLInt, 64, 1}, 8},
    {DType::kInt32, "int32", "I32", {kDLInt, 32, 1}, 4},
    {DType::kInt16, "int16", "I16", {kDLInt, 16, 1}, 2},
    {DType::kInt8, "int8", "I8", {kDLInt, 8, 1}, 1},
    {DType::kUInt8, "uint8", "U8", {kDLUInt, 8, 1}, 1},
    {DType::kBool, "bool", "BOOL", {kDLBool, 8, 1}, 1},
};

const DTypeInfo& info(DType t) {
  for (const auto& row : kInfo)
    if (row.type == t) return row;
  return kInfo[0];  // unreachable: every enumerator has a row
}

}  // namespace

std::string_view dtype_name(DType t) {
  return info(t).fib_name;
}
std::string_view safetensors_dtype_name(DType t) {
  return info(t).safetensors_name;
}
DLDataType dlpack_dtype(DType t) {
  return info(t).dlpack;
}
std::size_t dtype_size(DType t) {
  return info(t).size;
}

std::size_t storage_bytes(DType t, std::int64_t numel) {
  if (t == DType::kFloat4E2M1) return static_cast<std::size_t>((numel + 1) / 2);
  return static_cast<std::size_t>(numel) * dtype_size(t);
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& row : kInfo)
    if (row.fib_name == name) return row.type;
  return std::nullopt;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& row : kInfo)
    if (row.safetensors_name == name) return row.type;
  return std::nullopt;
}

bool is_floating(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat8E4M3:
    case DType::kFloat8E5M2:
    case DType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

bool is_integer(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 || t == DType::kInt8 ||
         t == DType::kUInt8;
}

}  // namespace kh
