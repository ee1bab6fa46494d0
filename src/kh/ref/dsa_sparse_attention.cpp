// CPU reference of dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64: per query token, softmax
// attention of each head over the cache rows its sparse index row selects. The compressed KV row
// is both the key (with the rotary kpe part) and the value; lse is the base-2 log-sum-exp of the
// natural-exp logits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <vector>

#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/reference_call.h"

namespace kh {
namespace {

constexpr int kHeads = 16;
constexpr int kCkvDim = 512;
constexpr int kKpeDim = 64;
constexpr int kPageSize = 64;
constexpr int kTopK = 2048;
constexpr std::int32_t kPadding = -1;

double bf16_at(const HostTensor& t, std::int64_t i) {
  return bf16_bits_to_float(t.data<std::uint16_t>()[i]);
}

}  // namespace

void dsa_sparse_attention_reference(const Definition& def, const AxisValues& axes,
                                    const InputSet& inputs, OutputSet& outputs) {
  ref::require_axis(def, axes, "num_qo_heads", kHeads);
  ref::require_axis(def, axes, "head_dim_ckv", kCkvDim);
  ref::require_axis(def, axes, "head_dim_kpe", kKpeDim);
  ref::require_axis(def, axes, "page_size", kPageSize);
  ref::require_axis(def, axes, "topk", kTopK);
  ref::check_call(def, axes, inputs, outputs);
  const std::int64_t num_tokens = ref::axis_value(def, axes, "num_tokens");
  const std::int64_t num_slots = ref::axis_value(def, axes, "num_pages") * kPageSize;

  const HostTensor& q_nope = inputs.at("q_nope");
  const HostTensor& q_pe = inputs.at("q_pe");
  const HostTensor& ckv_cache = inputs.at("ckv_cache");
  const HostTensor& kpe_cache = inputs.at("kpe_cache");
  const std::int32_t* sparse_indices = inputs.at("sparse_indices").data<std::int32_t>();
  const double sm_scale = ref::scalar_value("input 'sm_scale'", inputs.at("sm_scale"));
  HostTensor& output = outputs.at("output");
  float* lse = outputs.at("lse").data<float>();

  std::vector<std::int64_t> rows;  // the selected cache rows of one token, duplicates kept
  std::vector<double> logits, weights;
  double q[kCkvDim + kKpeDim], acc[kCkvDim];
  for (std::int64_t t = 0; t < num_tokens; ++t) {
    // Every -1 is padding wherever it sits; anything else must address a cache row.
    rows.clear();
    for (int j = 0; j < kTopK; ++j) {
      const std::int32_t index = sparse_indices[t * kTopK + j];
      if (index == kPadding) continue;
      if (index < 0 || index >= num_slots)
        fail("{}: sparse_indices[{}, {}] = {} is neither -1 (padding) nor a cache slot in [0, {})",
             def.name, t, j, index, num_slots);
      rows.push_back(index);
    }
    const auto n = static_cast<std::int64_t>(rows.size());
    for (int h = 0; h < kHeads; ++h) {
      const std::int64_t head = t * kHeads + h;
      if (n == 0) {  // all padding: zero output, lse -inf (exp-sum over nothing)
        for (int d = 0; d < kCkvDim; ++d) output.set(head * kCkvDim + d, 0.0);
        lse[head] = -std::numeric_limits<float>::infinity();
        continue;
      }
      for (int d = 0; d < kCkvDim; ++d) q[d] = bf16_at(q_nope, head * kCkvDim + d);
      for (int d = 0; d < kKpeDim; ++d) q[kCkvDim + d] = bf16_at(q_pe, head * kKpeDim + d);
      logits.resize(n);
      double max_logit = -std::numeric_limits<double>::infinity();
      for (std::int64_t i = 0; i < n; ++i) {
        double dot_ckv = 0, dot_kpe = 0;
        for (int d = 0; d < kCkvDim; ++d)
          dot_ckv += q[d] * bf16_at(ckv_cache, rows[i] * kCkvDim + d);
        for (int d = 0; d < kKpeDim; ++d)
          dot_kpe += q[kCkvDim + d] * bf16_at(kpe_cache, rows[i] * kKpeDim + d);
        logits[i] = (dot_ckv + dot_kpe) * sm_scale;
        max_logit = std::max(max_logit, logits[i]);
      }
      // Softmax and log-sum-exp relative to the maximum, so large logits do not overflow.
      weights.resize(n);
      double sum = 0;
      for (std::int64_t i = 0; i < n; ++i) sum += weights[i] = std::exp(logits[i] - max_logit);
      lse[head] = static_cast<float>((max_logit + std::log(sum)) / std::numbers::ln2);
      for (int d = 0; d < kCkvDim; ++d) acc[d] = 0;
      for (std::int64_t i = 0; i < n; ++i)
        for (int d = 0; d < kCkvDim; ++d)
          acc[d] += weights[i] * bf16_at(ckv_cache, rows[i] * kCkvDim + d);
      for (int d = 0; d < kCkvDim; ++d) output.set(head * kCkvDim + d, acc[d] / sum);
    }
  }
}

}  // namespace kh
