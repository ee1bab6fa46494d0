// Structured input generation for one operator. Plain random tensors are invalid or unrealistic
// for most inputs of the contest operators (indices, sequence lengths, scales, gates), so each
// operator has a class that knows which of its inputs are structural (fixed per workload), how to
// draw realistic values, and which adversarial variants it offers. Inputs it does not handle use
// the official distribution.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kh/core/host_tensor.h"
#include "kh/gen/draw_recipe.h"
#include "kh/gen/stream_key.h"
#include "kh/spec/definition.h"
#include "kh/spec/workload.h"

namespace kh {

/// Everything a generator may depend on. Streams are derived from (seed, uuid, trial, name).
struct GenContext {
  const Definition& definition;
  const Workload& workload;
  const AxisValues& axes;
  std::uint64_t seed;
  std::int64_t trial;
  std::string variant;  // "" for the realistic inputs, else an adversarial variant's name

  RandomStream stream(const std::string& name) const {
    return make_stream(seed, workload.uuid, trial, name);
  }
  RandomStream structural_stream(const std::string& name) const {
    return make_stream(seed, workload.uuid, kStructuralTrial, name);
  }
  std::int64_t axis(const std::string& name) const;
  /// An integer hint from the workload's "kh" object, or fallback.
  std::int64_t hint_int(const std::string& key, std::int64_t fallback) const;
  std::string hint_string(const std::string& key, const std::string& fallback) const;
};

struct VariantInfo {
  std::string name;
  std::string description;
  /// How much larger than realistic the variant makes the operator's values (and so its outputs).
  /// The absolute tolerance is scaled by it, so the check asks the relative accuracy that the
  /// official tolerance asks at realistic magnitudes, not a tighter one: with values x1e3 an
  /// unscaled atol of 1e-2 would demand 1e-5 relative accuracy, which no bf16 tensor-core kernel
  /// delivers and the official evaluator never asks.
  double value_scale = 1.0;
  /// The workloads the variant can be drawn for: axis `needs_axis` at least `needs_at_least`
  /// (empty: every workload). GDN's zero_length empties some sequences, so it needs two.
  std::string needs_axis = {};
  std::int64_t needs_at_least = 0;
};

class OperatorInputs {
 public:
  virtual ~OperatorInputs() = default;

  /// Inputs drawn once per workload (trial-independent).
  virtual bool is_structural(const std::string& input) const = 0;
  virtual std::vector<VariantInfo> variants() const = 0;
  /// Whether an optional input is given (false: passed as None / a null pointer).
  virtual bool is_present(const GenContext&, const std::string& /*input*/) const { return true; }
  /// A scalar's value when the workload does not give one (nullopt: official random draw).
  virtual std::optional<double> default_scalar(const std::string& /*input*/) const {
    return std::nullopt;
  }
  /// How input `name` is drawn when a recipe describes it: the host and the device generators
  /// then give the same bits. The default is the official distribution of the input's dtype;
  /// nullopt means the operator draws it in host code (fill).
  virtual std::optional<DrawRecipe> recipe(const GenContext& ctx, const std::string& name) const {
    return DrawRecipe{DrawKind::kOfficial, ctx.stream(name)};
  }
  /// Fills elements [begin, end) of `tensor` (allocated with the definition's shape) for an input
  /// whose recipe() is nullopt. Generators that are not element-wise only support the full range
  /// and say so with an error otherwise.
  virtual void fill(const GenContext& ctx, const std::string& name, HostTensor& tensor,
                    std::int64_t begin, std::int64_t end) const = 0;
};

/// The structured generator for a definition, or nullptr (plain official distributions).
std::unique_ptr<OperatorInputs> make_operator_inputs(const Definition& def);

/// Throws unless [begin, end) covers the whole tensor (for generators that are not element-wise).
void require_full_range(const std::string& name, const HostTensor& t, std::int64_t begin,
                        std::int64_t end);

// One factory per operator family, each in gen/operators/.
std::unique_ptr<OperatorInputs> make_gdn_inputs(bool prefill);
std::unique_ptr<OperatorInputs> make_dsa_attention_inputs();
std::unique_ptr<OperatorInputs> make_dsa_indexer_inputs();
std::unique_ptr<OperatorInputs> make_moe_inputs();

}  // namespace kh
