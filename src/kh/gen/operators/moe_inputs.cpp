// Inputs of the DeepSeek-V3 FP8 block-scaled MoE. FP8 tensors hold codes spread over the e4m3
// range (N(0,1) x 112, clamped to +-448, so |code| reaches 448 at 4 sigma) and positive block
// scales chosen so the dequantised values have realistic magnitudes: activations ~N(0,1) with
// per-(token, 128-block) scales, weights ~N(0, 0.02^2) with per-128x128-block scales. Every
// element is drawn independently, so any slice (one expert's weights) can be materialised alone.
#include <algorithm>

#include "kh/core/error.h"
#include "kh/gen/official_distribution.h"
#include "kh/gen/operator_inputs.h"

namespace kh {
namespace {

constexpr double kCodeStd = 112.0;  // e4m3 codes: std 112, clamped to the format's 448
constexpr double kFp8Max = 448.0;
constexpr double kWeightStd = 0.02;  // dequantised weight std
constexpr double kScaleJitterLo = 0.75, kScaleJitterHi = 1.25;
constexpr double kActivationScaleLo = 0.5, kActivationScaleHi = 2.0;
constexpr double kBiasStd = 0.1;         // bf16 routing bias
constexpr double kDominantLogit = 20.0;  // sigmoid(20) == 1.0f: beats every other expert
constexpr double kExtremeActivationScale = 1024.0;
constexpr double kRoutedScalingFactor = 2.5;  // DeepSeek-V3's value
constexpr int kExperts = 256, kLocalExperts = 32;

std::int64_t local_offset(const GenContext& ctx) {
  const WorkloadInput* in = ctx.workload.find_input("local_expert_offset");
  if (in && in->kind == WorkloadInput::Kind::kScalar)
    return static_cast<std::int64_t>(in->scalar_value());
  return 0;
}

class MoeInputs final : public OperatorInputs {
 public:
  bool is_structural(const std::string&) const override { return false; }

  std::vector<VariantInfo> variants() const override {
    return {
        {"one_expert",
         "every token routes to local experts 0 and 1 (hot experts whose group always wins; zero "
         "bias)"},
        {"no_local", "no token routes to any local expert (the output is all zeros)"},
        {"extreme", "activation scales x1024: large outputs, tests accumulation range"},
    };
  }

  std::optional<double> default_scalar(const std::string& input) const override {
    if (input == "local_expert_offset") return 0.0;
    if (input == "routed_scaling_factor") return kRoutedScalingFactor;
    return std::nullopt;
  }

  std::optional<DrawRecipe> recipe(const GenContext& ctx, const std::string& name) const override {
    DrawRecipe r{DrawKind::kOfficial, ctx.stream(name)};  // routing_logits: N(0,1) officially
    if (name == "hidden_states" || name == "gemm1_weights" || name == "gemm2_weights") {
      r.kind = DrawKind::kClampedScaledNormal;
      r.scale = kCodeStd;
      r.hi = kFp8Max;
    } else if (name == "hidden_states_scale") {
      const double gain = ctx.variant == "extreme" ? kExtremeActivationScale : 1.0;
      r.kind = DrawKind::kScaledUniform;
      r.scale = gain / kCodeStd;
      r.lo = kActivationScaleLo;
      r.hi = kActivationScaleHi;
    } else if (name == "gemm1_weights_scale" || name == "gemm2_weights_scale") {
      r.kind = DrawKind::kScaledUniform;
      r.scale = kWeightStd / kCodeStd;
      r.lo = kScaleJitterLo;
      r.hi = kScaleJitterHi;
    } else if (name == "routing_bias" || (name == "routing_logits" && hot_variant(ctx))) {
      return std::nullopt;  // 256 values, some of them planted: host code
    }
    return r;
  }

  void fill(const GenContext& ctx, const std::string& name, HostTensor& t, std::int64_t begin,
            std::int64_t end) const override {
    const RandomStream s = ctx.stream(name);
    auto each = [&](auto value_of) {
      for (std::int64_t i = begin; i < end; ++i) t.set(i, value_of(i));
    };
    if (name == "routing_bias") {
      const bool zero = hot_variant(ctx);
      each([&](std::int64_t i) { return zero ? 0.0 : kBiasStd * s.normal(i); });
      return;
    }
    if (name != "routing_logits") fail("moe inputs: no host generator for '{}'", name);
    const std::int64_t offset = local_offset(ctx);
    each([&](std::int64_t i) {
      const std::int64_t expert = i % kExperts;
      if (ctx.variant == "one_expert" && (expert == offset || expert == (offset ^ 1)))
        return kDominantLogit;  // local expert 0 and a neighbour in its group: the group wins
      if (ctx.variant == "no_local" && expert >= offset && expert < offset + kLocalExperts)
        return -kDominantLogit;
      return s.normal(i);
    });
  }

 private:
  static bool hot_variant(const GenContext& ctx) {
    return ctx.variant == "one_expert" || ctx.variant == "no_local";
  }
};

}  // namespace

std::unique_ptr<OperatorInputs> make_moe_inputs() {
  return std::make_unique<MoeInputs>();
}

}  // namespace kh
