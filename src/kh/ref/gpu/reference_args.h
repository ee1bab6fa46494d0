// The tensors of one reference call as the GPU references see them: DLTensors by name (device
// pointers on the GPU, host pointers under host emulation; scalars are 0-d host tensors; an
// absent optional input has a null data pointer) and the axis values. Plain C++17 so that the
// CUDA translation units can include it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <dlpack/dlpack.h>

namespace kh::gpuref {

struct NamedDLTensor {
  std::string name;
  DLTensor tensor;
};

class ReferenceArgs {
 public:
  ReferenceArgs(std::string definition, std::map<std::string, std::int64_t> axes,
                std::vector<NamedDLTensor> inputs, std::vector<NamedDLTensor> outputs)
      : definition_(std::move(definition)),
        axes_(std::move(axes)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)) {}

  const std::string& definition() const { return definition_; }
  std::int64_t axis(std::string_view name) const;

  /// An input's data (null when an optional input is absent); an error if the name is unknown.
  template <class T>
  const T* in(std::string_view name) const {
    return static_cast<const T*>(find(inputs_, name, "input").data);
  }
  template <class T>
  T* out(std::string_view name) const {
    return static_cast<T*>(find(outputs_, name, "output").data);
  }
  /// A float32 or int32 scalar input's value, or `fallback` when it is absent.
  double scalar(std::string_view name, double fallback) const;

 private:
  const DLTensor& find(const std::vector<NamedDLTensor>& tensors, std::string_view name,
                       const char* what) const;

  std::string definition_;
  std::map<std::string, std::int64_t> axes_;
  std::vector<NamedDLTensor> inputs_;
  std::vector<NamedDLTensor> outputs_;
};

}  // namespace kh::gpuref
