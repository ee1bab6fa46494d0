// A FlashInfer-Bench workload: values for a definition's var axes plus, per input, how to obtain
// it (random, a scalar value, or a tensor in a safetensors file under the dataset root). On disk a
// workload is a trace line `{"definition", "solution": null, "evaluation": null, "workload"}` in
// `workloads/<op_type>/<definition>.jsonl`.
//
// kh extension: a workload may carry `"kh": {...}`, hints for kh's structured generators (for
// example the page span of DSA sparse indices). FlashInfer-Bench ignores unknown keys.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "kh/core/json_io.h"
#include "kh/spec/definition.h"

namespace kh {

struct WorkloadInput {
  enum class Kind { kRandom, kScalar, kSafetensors };
  Kind kind = Kind::kRandom;
  Json scalar;             // kScalar: the JSON value as written (int, float or bool)
  std::string path;        // kSafetensors: relative to the dataset root (or absolute)
  std::string tensor_key;  // kSafetensors

  /// A scalar's value as a number (true/false as 1/0).
  double scalar_value() const {
    return scalar.is_boolean() ? scalar.get<bool>() : scalar.get<double>();
  }
};

struct Workload {
  std::string uuid;
  std::vector<std::pair<std::string, std::int64_t>> axes;  // var axes, in file order
  std::vector<std::pair<std::string, WorkloadInput>> inputs;
  Json hints = Json::object();  // the "kh" extension object

  const WorkloadInput* find_input(const std::string& name) const;
  std::int64_t axis(const std::string& name) const;  // error if absent

  static Workload from_json(const JsonCursor& cursor);
  Json to_json() const;
};

/// One line of a workloads JSONL file.
struct WorkloadRecord {
  std::string definition;
  Workload workload;
};

std::vector<WorkloadRecord> load_workload_file(const std::filesystem::path& path);
void save_workload_file(const std::filesystem::path& path,
                        const std::vector<WorkloadRecord>& records);

/// Checks a workload against its definition (every var axis given once with a value >= 0, no
/// unknown axes or inputs, scalars only for scalar inputs) and returns all axis values. `where`
/// prefixes error messages (e.g. "workloads/x.jsonl:3").
AxisValues resolve_axes(const Definition& def, const Workload& workload, const std::string& where);

}  // namespace kh
