#include "kh/gen/input_set.h"

#include "kh/core/error.h"

namespace kh {

void TensorSet::add(std::string name, HostTensor tensor, bool present) {
  items_.push_back({std::move(name), std::move(tensor), present});
}

const HostTensor* TensorSet::find(const std::string& name) const {
  for (const auto& item : items_)
    if (item.name == name) return item.present ? &item.tensor : nullptr;
  return nullptr;
}

HostTensor* TensorSet::find(const std::string& name) {
  for (auto& item : items_)
    if (item.name == name) return item.present ? &item.tensor : nullptr;
  return nullptr;
}

const HostTensor& TensorSet::at(const std::string& name) const {
  for (const auto& item : items_) {
    if (item.name != name) continue;
    if (!item.present) fail("tensor '{}' is absent (an optional input that was not given)", name);
    return item.tensor;
  }
  fail("no tensor named '{}'", name);
}

HostTensor& TensorSet::at(const std::string& name) {
  return const_cast<HostTensor&>(static_cast<const TensorSet*>(this)->at(name));
}

TensorSet TensorSet::clone() const {
  TensorSet copy;
  for (const auto& item : items_) copy.add(item.name, item.tensor.clone(), item.present);
  return copy;
}

}  // namespace kh
