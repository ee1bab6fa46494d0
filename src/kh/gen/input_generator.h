// Produces the inputs of one workload for one trial: safetensors inputs from the dataset,
// scalars from the workload, everything else from the operator's structured generator or the
// official distributions, reproducible bit for bit from (seed, workload uuid, trial).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kh/gen/input_set.h"
#include "kh/gen/operator_inputs.h"
#include "kh/spec/definition.h"
#include "kh/spec/workload.h"

namespace kh {

struct GeneratorOptions {
  std::uint64_t seed = kDefaultSeed;
  std::string variant;  // adversarial variant name, "" for realistic inputs
};

class InputGenerator {
 public:
  /// dataset_root resolves relative safetensors paths of the workload.
  InputGenerator(const Definition& def, Workload workload, std::filesystem::path dataset_root,
                 GeneratorOptions options = {});
  ~InputGenerator();

  const AxisValues& axes() const { return axes_; }
  const Workload& workload() const { return workload_; }
  const Definition& definition() const { return def_; }

  /// All inputs of a trial. Inputs named in `deferred` are allocated (zero) but not filled, for
  /// callers that materialise only the part they touch (fill_range).
  InputSet generate(std::int64_t trial, const std::set<std::string>& deferred = {}) const;
  /// Fills elements [begin, end) of one input as generate() would.
  void fill_range(const std::string& input, std::int64_t trial, HostTensor& tensor,
                  std::int64_t begin, std::int64_t end) const;
  bool is_structural(const std::string& input) const;
  /// The recipe input `input` of trial `trial` is drawn with (so it can be drawn on a device),
  /// or nullopt if it comes from the workload, is a scalar or absent, or is drawn by host code.
  std::optional<DrawRecipe> recipe(const std::string& input, std::int64_t trial) const;

  /// The value scale of this generator's variant (VariantInfo::value_scale; 1 for none).
  double value_scale() const;

  /// Adversarial variants offered for a definition.
  static std::vector<VariantInfo> variants(const Definition& def);
  /// Why `variant` cannot be drawn for `workload` ("variant zero_length needs num_seqs >= 2; the
  /// workload has 1"), or "" when it can (or `variant` is ""). Commands over many workloads skip
  /// those instead of failing on them.
  static std::string variant_does_not_apply(const Definition& def, const std::string& variant,
                                            const Workload& workload);

 private:
  GenContext context(std::int64_t trial, const std::string& input) const;
  std::optional<DrawRecipe> recipe_of(const GenContext& ctx, const std::string& input) const;
  HostTensor load_safetensors_input(const TensorDecl& decl, const WorkloadInput& source) const;

  const Definition& def_;
  Workload workload_;
  std::filesystem::path dataset_root_;
  GeneratorOptions options_;
  AxisValues axes_;
  std::unique_ptr<OperatorInputs> op_;
};

}  // namespace kh
