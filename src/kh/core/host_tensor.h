// A dense, contiguous, row-major tensor in host memory: the currency between generators,
// references, checkers and files. Storage is zero-initialised lazily (calloc), so a full-size
// tensor of which a test touches only a slice costs only that slice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <dlpack/dlpack.h>

#include "kh/core/dtype.h"

namespace kh {

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);
std::string shape_string(const Shape& shape);  // "[2, 3]"; a scalar is "[]"

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, Shape shape);  // zero-filled

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return storage_bytes(dtype_, numel()); }
  bool is_scalar() const { return shape_.empty(); }
  bool empty_storage() const { return !data_; }

  std::byte* bytes() { return data_.get(); }
  const std::byte* bytes() const { return data_.get(); }
  std::span<std::byte> byte_span() { return {data_.get(), nbytes()}; }
  std::span<const std::byte> byte_span() const { return {data_.get(), nbytes()}; }

  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(data_.get());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_.get());
  }

  /// Element i converted to double (narrow floats decoded exactly; bool as 0/1).
  double get(std::int64_t i) const;
  /// Stores v into element i, rounding to the element type (integers: truncation toward zero).
  void set(std::int64_t i, double v);

  /// A DLPack view of this tensor's host memory (valid while the tensor lives). The shape
  /// array is owned by the tensor.
  DLTensor dlpack_view();

  HostTensor clone() const;
  bool bytes_equal(const HostTensor& other) const;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::unique_ptr<std::byte, FreeDeleter> data_;
};

}  // namespace kh
