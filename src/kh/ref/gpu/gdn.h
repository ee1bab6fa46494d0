// GPU reference of the Gated Delta Net decode and prefill definitions. One thread owns one row
// v of one head's k-last state M[v][:] (= column v of S) for one sequence and walks that
// sequence's tokens in order: the delta rule updates each row from its own k-projection only,
// so rows are independent. Decode is prefill with one token per batch element. The arithmetic
// is the CPU reference's (gdn_step.h) in double, regrouped (below), so the two agree to rounding.
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

  // Token t changes the row to g_t * m + k_t * delta_t with delta_t = new_v - old_v =
  // beta_t * (v_t - old_v), and its output is q_t . (that row) = g_t (q_t . m) + delta_t (q_t .
  // k_t): the reference's step regrouped, equal up to double rounding. So one walk over the row per
  // token suffices: it applies the previous token's change and gathers this token's three dot
  // products (in kLanes partial sums, so that the multiply-adds do not wait on each other). Two
  // dependent walks per token, as written in the reference, made this kernel the slowest part of
  // a validation trial.
  static constexpr int kLanes = 4;

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
    // The change of the previous token not yet applied to m: m = g * m + k * delta (none yet:
    // g = 1, delta = 0, which leaves m exactly as it is).
    double pending_g = 1.0, pending_delta = 0.0;
    std::int64_t pending_k = 0;
    for (std::int64_t t = begin; t < end; ++t) {
      const std::int64_t head = t * kVHeads + h;
      const std::int64_t qk = (t * kQKHeads + h / (kVHeads / kQKHeads)) * kDim;
      if (t == begin) pending_k = qk;
      const double g = exp(-exp(static_cast<double>(A_log[h])) *
                           softplus(static_cast<double>(load_bf16(a, head)) + dt_bias[h]));
      const double beta = 1.0 / (1.0 + exp(-static_cast<double>(load_bf16(b, head))));
      double km[kLanes] = {}, qm[kLanes] = {}, qq[kLanes] = {};
      for (int d0 = 0; d0 < kDim; d0 += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const int d = d0 + l;
          m[d] =
              pending_g * m[d] + static_cast<double>(load_bf16(k, pending_k + d)) * pending_delta;
          const double kd = load_bf16(k, qk + d);
          const double qd = load_bf16(q, qk + d);
          km[l] += kd * m[d];
          qm[l] += qd * m[d];
          qq[l] += qd * kd;
        }
      double k_m = 0, q_m = 0, q_k = 0;
      for (int l = 0; l < kLanes; ++l) k_m += km[l], q_m += qm[l], q_k += qq[l];
      const double old_v = g * k_m;
      const double delta = beta * (static_cast<double>(load_bf16(v, head * kDim + row)) - old_v);
      store_bf16(output, head * kDim + row, static_cast<float>(scale * (g * q_m + delta * q_k)));
      pending_g = g, pending_delta = delta, pending_k = qk;
    }
    for (int d = 0; d < kDim; ++d)  // k is read only where a token was (it may have no rows)
      new_state[first + d] = static_cast<float>(
          end > begin
              ? pending_g * m[d] + static_cast<double>(load_bf16(k, pending_k + d)) * pending_delta
              : m[d]);
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
