#include "kh/core/host_tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kh/core/element_codec.h"
#include "kh/core/error.h"
#include "kh/core/minifloat.h"

namespace kh {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void HostTensor::FreeDeleter::operator()(std::byte* p) const {
  std::free(p);
}

HostTensor::HostTensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (auto d : shape_)
    if (d < 0) fail("tensor shape {} has a negative dimension", shape_string(shape_));
  // calloc(0) may return null; keep one byte so that bytes() is always a valid pointer.
  const std::size_t n = nbytes();
  data_.reset(static_cast<std::byte*>(std::calloc(n ? n : 1, 1)));
  if (!data_) fail("out of host memory allocating {} bytes for a {} tensor", n, dtype_name(dtype));
}

double HostTensor::get(std::int64_t i) const {
  const std::byte* p = data_.get();
  switch (dtype_) {
    case DType::kFloat64:
      return reinterpret_cast<const double*>(p)[i];
    case DType::kFloat32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::kFloat16:
      return f16_bits_to_float(reinterpret_cast<const std::uint16_t*>(p)[i]);
    case DType::kBFloat16:
      return bf16_bits_to_float(reinterpret_cast<const std::uint16_t*>(p)[i]);
    case DType::kFloat8E4M3:
      return e4m3_to_float(reinterpret_cast<const std::uint8_t*>(p)[i]);
    case DType::kFloat8E5M2:
      return e5m2_to_float(reinterpret_cast<const std::uint8_t*>(p)[i]);
    case DType::kFloat4E2M1: {
      const std::uint8_t pair = reinterpret_cast<const std::uint8_t*>(p)[i / 2];
      return e2m1_to_float(static_cast<std::uint8_t>(i % 2 ? pair >> 4 : pair & 0xf));
    }
    case DType::kInt64:
      return static_cast<double>(reinterpret_cast<const std::int64_t*>(p)[i]);
    case DType::kInt32:
      return reinterpret_cast<const std::int32_t*>(p)[i];
    case DType::kInt16:
      return reinterpret_cast<const std::int16_t*>(p)[i];
    case DType::kInt8:
      return reinterpret_cast<const std::int8_t*>(p)[i];
    case DType::kUInt8:
      return reinterpret_cast<const std::uint8_t*>(p)[i];
    case DType::kBool:
      return reinterpret_cast<const std::uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

void HostTensor::set(std::int64_t i, double v) { store_element(data_.get(), dtype_, i, v); }

DLTensor HostTensor::dlpack_view() {
  DLTensor t{};
  t.data = data_.get();
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<std::int32_t>(shape_.size());
  t.dtype = dlpack_dtype(dtype_);
  t.shape = shape_.data();
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  return t;
}

HostTensor HostTensor::clone() const {
  HostTensor copy(dtype_, shape_);
  std::memcpy(copy.bytes(), bytes(), nbytes());
  return copy;
}

bool HostTensor::bytes_equal(const HostTensor& other) const {
  return dtype_ == other.dtype_ && shape_ == other.shape_ &&
         std::memcmp(bytes(), other.bytes(), nbytes()) == 0;
}

}  // namespace kh
