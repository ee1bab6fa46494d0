// GPU reference of the Gated Delta Net decode and prefill definitions. One thread owns one row
// v of one head's k-last state M[v][:] (= column v of S) for one sequence and walks that
// sequence's tokens in order: the delta rule updates each row from its own k-projection only,
// so rows are independent. Decode is prefill with one token per batch element. The arithmetic
// is the CPU reference's (gdn_step.h) in double, so the two agree to rounding.
#pragma once

#include <cmath>
#include <cstdint>

#include "kh/core/host_device.h"
#include "kh/ref/gpu/element_load.h"
#include "kh/ref/gpu/reference_args.h"

namespace kh::gpuref {

struct GdnRowStep {
  static constexpr int kDim = 128, kQKHeads = 4, kVHeads = 8;

  const std::uint16_t *q, *k, *v, *a, *b;  // bf16 [tokens, heads(, 128)]
  const float *A_log, *dt_bias;            // [8]
  const float* state;                      // [seqs, 8, 128, 128] or null (zeros)
  const std::int64_t* cu_seqlens;          // [seqs + 1], or null: sequence s is token s
  std::int64_t tokens;                     // bounds cu_seqlens (no out-of-range access)
  double scale;
  std::uint16_t* output;  // bf16 [tokens, 8, 128]
  float* new_state;       // [seqs, 8, 128, 128]

  KH_HD std::int64_t clamp_token(std::int64_t t) const {
    return t < 0 ? 0 : t > tokens ? tokens : t;
  }
  KH_HD static double softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

  KH_HD void operator()(std::int64_t i) const {
    const int row = static_cast<int>(i % kDim);
    const int h = static_cast<int>(i / kDim % kVHeads);
    const std::int64_t seq = i / (kDim * kVHeads);
    const std::int64_t first = (seq * kVHeads + h) * kDim * kDim + row * kDim;
    double m[kDim];
    for (int d = 0; d < kDim; ++d) m[d] = state ? state[first + d] : 0.0;
    const std::int64_t begin = cu_seqlens ? clamp_token(cu_seqlens[seq]) : seq;
    const std::int64_t end = cu_seqlens ? clamp_token(cu_seqlens[seq + 1]) : seq + 1;
    // As in the reference, an empty sequence leaves its new_state zero, even with a state given.
    if (end <= begin)
      for (int d = 0; d < kDim; ++d) m[d] = 0.0;
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t head = t * kVHeads + h;
      const std::int64_t qk = (t * kQKHeads + h / (kVHeads / kQKHeads)) * kDim;
      const double g = exp(-exp(static_cast<double>(A_log[h])) *
                           softplus(static_cast<double>(load_bf16(a, head)) + dt_bias[h]));
      const double beta = 1.0 / (1.0 + exp(-static_cast<double>(load_bf16(b, head))));
      double old_v = 0;
      for (int d = 0; d < kDim; ++d) {
        m[d] *= g;
        old_v += static_cast<double>(load_bf16(k, qk + d)) * m[d];
      }
      const double new_v = beta * load_bf16(v, head * kDim + row) + (1.0 - beta) * old_v;
      double o = 0;
      for (int d = 0; d < kDim; ++d) {
        const double kd = load_bf16(k, qk + d);
        m[d] = (m[d] - kd * old_v) + kd * new_v;
        o += static_cast<double>(load_bf16(q, qk + d)) * m[d];
      }
      store_bf16(output, head * kDim + row, static_cast<float>(scale * o));
    }
    for (int d = 0; d < kDim; ++d) new_state[first + d] = static_cast<float>(m[d]);
  }
};

/// Both GDN definitions; `prefill` selects the varlen form (cu_seqlens, [T, heads, 128]).
template <class Exec>
void gdn_reference(Exec& exec, const ReferenceArgs& args, bool prefill) {
  GdnRowStep step{};
  step.q = args.in<std::uint16_t>("q");
  step.k = args.in<std::uint16_t>("k");
  step.v = args.in<std::uint16_t>("v");
  step.a = args.in<std::uint16_t>("a");
  step.b = args.in<std::uint16_t>("b");
  step.A_log = args.in<float>("A_log");
  step.dt_bias = args.in<float>("dt_bias");
  step.state = args.in<float>("state");
  step.cu_seqlens = prefill ? args.in<std::int64_t>("cu_seqlens") : nullptr;
  step.tokens = prefill ? args.axis("total_seq_len") : args.axis("batch_size");
  const double scale = args.scalar("scale", 0.0);  // 0 or absent: 1/sqrt(head_size)
  step.scale = scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(GdnRowStep::kDim)) : scale;
  step.output = args.out<std::uint16_t>("output");
  step.new_state = args.out<float>("new_state");
  const std::int64_t seqs = prefill ? args.axis("num_seqs") : args.axis("batch_size");
  exec.for_each(seqs * GdnRowStep::kVHeads * GdnRowStep::kDim, step);
}

}  // namespace kh::gpuref
