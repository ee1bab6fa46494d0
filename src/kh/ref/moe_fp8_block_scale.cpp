// CPU reference of moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048: DeepSeek-V3
// routing (moe_routing.h), then for each token and each of its selected experts that is local to
// this rank: GEMM1 (W13) -> SwiGLU with SiLU on the SECOND half -> GEMM2 (W2), weighted into the
// token's output. FP8 values are dequantized per 128-block exactly as the reference does (fp8 *
// scale in float32); the GEMMs and the output accumulate in double and the intermediate stays in
// double (no re-quantization).
//
// Cost: the weights are 1.4 GB, so only routed experts are read, and tokens are processed in
// chunks grouped by expert so each dequantized weight row is reused by every token of the chunk.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kh/core/minifloat.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/moe_routing.h"
#include "kh/ref/reference_call.h"

namespace kh {
namespace {

using namespace moe;

constexpr int kHiddenBlocks = kHidden / kBlock;              // 56
constexpr int kIntermediateBlocks = kIntermediate / kBlock;  // 16
constexpr int kGemm1OutBlocks = kGemm1Out / kBlock;          // 32
// Tokens per chunk: bounds the double accumulators (~57 KB per token) for long sequences.
constexpr std::int64_t kTokensPerChunk = 128;

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[c] = e4m3_to_float(static_cast<std::uint8_t>(c));
    return t;
  }();
  return table;
}

// Row `row` of a [rows, cols] FP8 matrix dequantized with its [rows/128, cols/128] block scales;
// each element is fp8 * scale rounded to float32, as the reference's dequantization does.
void dequantize_row(const std::uint8_t* fp8, const float* scales, std::int64_t row, int cols,
                    double* out) {
  const auto& table = e4m3_table();
  const int col_blocks = cols / kBlock;
  const std::uint8_t* codes = fp8 + row * cols;
  const float* row_scales = scales + (row / kBlock) * col_blocks;
  for (int c = 0; c < cols; ++c) out[c] = table[codes[c]] * row_scales[c / kBlock];
}

// Four partial sums: shortens the floating-point add dependency chain of these long dot
// products; double keeps the result far more accurate than the float32 reference anyway.
double dot(const double* x, const double* y, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i] * y[i];
    s1 += x[i + 1] * y[i + 1];
    s2 += x[i + 2] * y[i + 2];
    s3 += x[i + 3] * y[i + 3];
  }
  for (; i < n; ++i) s0 += x[i] * y[i];
  return (s0 + s1) + (s2 + s3);
}

struct Assignment {
  std::int64_t token;
  float weight;
};

}  // namespace

void moe_fp8_block_scale_reference(const Definition& def, const AxisValues& axes,
                                   const InputSet& inputs, OutputSet& outputs) {
  ref::require_axis(def, axes, "num_experts", kNumExperts);
  ref::require_axis(def, axes, "num_local_experts", kLocalExperts);
  ref::require_axis(def, axes, "hidden_size", kHidden);
  ref::require_axis(def, axes, "intermediate_size", kIntermediate);
  ref::require_axis(def, axes, "gemm1_out_size", kGemm1Out);
  ref::require_axis(def, axes, "num_hidden_blocks", kHiddenBlocks);
  ref::require_axis(def, axes, "num_intermediate_blocks", kIntermediateBlocks);
  ref::require_axis(def, axes, "num_gemm1_out_blocks", kGemm1OutBlocks);
  ref::check_call(def, axes, inputs, outputs);
  const std::int64_t tokens = ref::axis_value(def, axes, "seq_len");

  const auto offset = static_cast<std::int64_t>(
      ref::scalar_value("input 'local_expert_offset'", inputs.at("local_expert_offset")));
  const auto scaling = static_cast<float>(
      ref::scalar_value("input 'routed_scaling_factor'", inputs.at("routed_scaling_factor")));
  const std::vector<MoeRoute> routes =
      moe_route(inputs.at("routing_logits"), inputs.at("routing_bias"), scaling);

  const auto* hidden = inputs.at("hidden_states").data<std::uint8_t>();
  const float* hidden_scale = inputs.at("hidden_states_scale").data<float>();  // [56, T]
  const auto* w13 = inputs.at("gemm1_weights").data<std::uint8_t>();
  const float* w13_scale = inputs.at("gemm1_weights_scale").data<float>();
  const auto* w2 = inputs.at("gemm2_weights").data<std::uint8_t>();
  const float* w2_scale = inputs.at("gemm2_weights_scale").data<float>();
  HostTensor& output = outputs.at("output");
  const auto& table = e4m3_table();

  std::vector<double> weight_row(kHidden);
  std::vector<double> activations, gemm1, swiglu, accumulator;
  for (std::int64_t first = 0; first < tokens; first += kTokensPerChunk) {
    const std::int64_t chunk = std::min(kTokensPerChunk, tokens - first);
    accumulator.assign(chunk * kHidden, 0.0);
    for (int le = 0; le < kLocalExperts; ++le) {
      const std::int64_t ge = offset + le;
      if (ge < 0 || ge >= kNumExperts) continue;
      std::vector<Assignment> assigned;
      for (std::int64_t t = first; t < first + chunk; ++t)
        for (int i = 0; i < kTopK; ++i)
          if (routes[t].expert[i] == ge) assigned.push_back({t, routes[t].weight[i]});
      if (assigned.empty()) continue;
      const auto n = static_cast<std::int64_t>(assigned.size());

      // A = fp8(hidden) * hidden_scale[k/128, t]: the activation scale is stored transposed.
      activations.resize(n * kHidden);
      for (std::int64_t a = 0; a < n; ++a) {
        const std::int64_t t = assigned[a].token;
        for (int k = 0; k < kHidden; ++k)
          activations[a * kHidden + k] =
              table[hidden[t * kHidden + k]] * hidden_scale[(k / kBlock) * tokens + t];
      }
      // GEMM1: G = A . W13[le]^T, one dequantized weight row at a time.
      gemm1.resize(n * kGemm1Out);
      const std::uint8_t* w13_e = w13 + static_cast<std::int64_t>(le) * kGemm1Out * kHidden;
      const float* w13_scale_e = w13_scale + le * kGemm1OutBlocks * kHiddenBlocks;
      for (int row = 0; row < kGemm1Out; ++row) {
        dequantize_row(w13_e, w13_scale_e, row, kHidden, weight_row.data());
        for (std::int64_t a = 0; a < n; ++a)
          gemm1[a * kGemm1Out + row] = dot(&activations[a * kHidden], weight_row.data(), kHidden);
      }
      // C = SiLU(X2) * X1 with X1 = G[:2048], X2 = G[2048:].
      swiglu.resize(n * kIntermediate);
      for (std::int64_t a = 0; a < n; ++a)
        for (int i = 0; i < kIntermediate; ++i) {
          const double x1 = gemm1[a * kGemm1Out + i];
          const double x2 = gemm1[a * kGemm1Out + kIntermediate + i];
          swiglu[a * kIntermediate + i] = x2 / (1.0 + std::exp(-x2)) * x1;
        }
      // GEMM2: O = C . W2[le]^T, weighted into the token's output.
      const std::uint8_t* w2_e = w2 + static_cast<std::int64_t>(le) * kHidden * kIntermediate;
      const float* w2_scale_e = w2_scale + le * kHiddenBlocks * kIntermediateBlocks;
      for (int h = 0; h < kHidden; ++h) {
        dequantize_row(w2_e, w2_scale_e, h, kIntermediate, weight_row.data());
        for (std::int64_t a = 0; a < n; ++a)
          accumulator[(assigned[a].token - first) * kHidden + h] +=
              assigned[a].weight *
              dot(&swiglu[a * kIntermediate], weight_row.data(), kIntermediate);
      }
    }
    for (std::int64_t i = 0; i < chunk * kHidden; ++i)
      output.set(first * kHidden + i, accumulator[i]);
  }
}

}  // namespace kh
