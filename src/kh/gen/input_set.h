// The inputs of one call of an operator, in the definition's order, or its outputs. An absent
// optional input (e.g. GDN `state` = None) has present = false and an empty tensor.
#pragma once

#include <string>
#include <vector>

#include "kh/core/host_tensor.h"

namespace kh {

struct NamedTensor {
  std::string name;
  HostTensor tensor;
  bool present = true;
};

class TensorSet {
 public:
  void add(std::string name, HostTensor tensor, bool present = true);

  std::size_t size() const { return items_.size(); }
  NamedTensor& operator[](std::size_t i) { return items_[i]; }
  const NamedTensor& operator[](std::size_t i) const { return items_[i]; }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

  /// The tensor named `name`; an error if there is none or it is absent.
  HostTensor& at(const std::string& name);
  const HostTensor& at(const std::string& name) const;
  /// Null if absent (an optional input that was not given) or unknown.
  const HostTensor* find(const std::string& name) const;
  HostTensor* find(const std::string& name);

  TensorSet clone() const;

 private:
  std::vector<NamedTensor> items_;
};

using InputSet = TensorSet;
using OutputSet = TensorSet;

}  // namespace kh
