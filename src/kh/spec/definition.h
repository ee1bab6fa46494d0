// A FlashInfer-Bench operator definition: axes (const or var), inputs and outputs with symbolic
// shapes and dtypes, constraints and the PyTorch reference kept as text. The order of inputs, then
// outputs, is the call signature of every implementation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/core/dtype.h"
#include "kh/core/host_tensor.h"
#include "kh/core/json_io.h"

namespace kh {

struct AxisDecl {
  std::string name;
  bool is_const = false;
  std::int64_t value = 0;  // const axes only
  std::string description;
};

struct TensorDecl {
  std::string name;
  std::optional<std::vector<std::string>> shape;  // nullopt: a scalar (`"shape": null`)
  DType dtype = DType::kFloat32;
  std::string description;
  bool optional = false;  // `"optional": true`; an absent optional input is passed as null

  bool is_scalar() const { return !shape.has_value(); }
};

/// Values of every axis of a definition for one workload, const axes included.
using AxisValues = std::map<std::string, std::int64_t>;

struct Definition {
  std::string name;
  std::string op_type;
  std::string description;
  std::vector<std::string> tags;
  std::vector<AxisDecl> axes;
  std::vector<std::string> constraints;
  std::vector<TensorDecl> inputs;
  std::vector<TensorDecl> outputs;
  std::string reference;
  Json extra = Json::object();  // keys kh does not interpret, kept so that files round-trip

  const AxisDecl* find_axis(const std::string& axis) const;
  const TensorDecl* find_input(const std::string& input) const;
  const TensorDecl* find_output(const std::string& output) const;
  std::size_t input_index(const std::string& input) const;  // error if absent

  /// Shape of a declared tensor for the given axis values; [] for a scalar.
  Shape shape_of(const TensorDecl& tensor, const AxisValues& axes) const;

  static Definition from_json(const JsonCursor& cursor);
  Json to_json() const;
};

Definition load_definition(const std::filesystem::path& path);
void save_definition(const Definition& def, const std::filesystem::path& path);

}  // namespace kh
