// The Gated Delta Net math shared by the decode and prefill references: the gates and one token
// of the delta rule on one value head. Both definitions apply exactly this recurrence (prefill
// token by token), so it is written once.
#pragma once

#include <cmath>

#include "kh/core/host_tensor.h"
#include "kh/gen/input_set.h"
#include "kh/ref/reference_call.h"
#include "kh/spec/definition.h"

namespace kh::gdn {

inline constexpr int kHeadSize = 128;
inline constexpr int kQKHeads = 4;
inline constexpr int kVHeads = 8;
// GVA: value head h reads q/k head h / kVHeadsPerQKHead (torch repeat_interleave).
inline constexpr int kVHeadsPerQKHead = kVHeads / kQKHeads;
inline constexpr int kStateElements = kHeadSize * kHeadSize;

/// Fails unless the const axes are the ones the loops below are written for.
inline void require_gdn_axes(const Definition& def, const AxisValues& axes) {
  ref::require_axis(def, axes, "num_q_heads", kQKHeads);
  ref::require_axis(def, axes, "num_k_heads", kQKHeads);
  ref::require_axis(def, axes, "num_v_heads", kVHeads);
  ref::require_axis(def, axes, "head_size", kHeadSize);
}

/// The output scale: a scale of 0, or none given, means 1/sqrt(head_size), as in the reference.
inline double output_scale(const InputSet& inputs) {
  const HostTensor* scale = inputs.find("scale");
  const double value = scale ? ref::scalar_value("input 'scale'", *scale) : 0.0;
  return value == 0.0 ? 1.0 / std::sqrt(static_cast<double>(kHeadSize)) : value;
}

/// torch.nn.functional.softplus with its defaults (beta 1, threshold 20: linear above 20).
inline double softplus(double x) {
  return x > 20.0 ? x : std::log1p(std::exp(x));
}

struct Gates {
  double g;     // decay, in (0, 1]
  double beta;  // update strength, in (0, 1)
};

/// g = exp(-exp(A_log) * softplus(a + dt_bias)), beta = sigmoid(b). The reference evaluates this
/// in float32; double differs by float rounding only.
inline Gates gates(double A_log, double a, double dt_bias, double b) {
  return {std::exp(-std::exp(A_log) * softplus(a + dt_bias)), 1.0 / (1.0 + std::exp(-b))};
}

/// One token of the delta rule on one value head, in place. `state` is the head's k-last state
/// M[v][k] = S[k][v] (the tensors' own layout); q and k have kHeadSize elements, v too.
/// Follows the reference step for step, in the K x V orientation S:
///   old = g*S;  old_v = k^T old;  new_v = beta*v + (1-beta)*old_v;
///   S' = old - k old_v^T + k new_v^T;  out = scale * q^T S'   (the UPDATED state).
/// Each value row v of M only needs its own old_v[v], so the update goes row by row.
inline void delta_rule_step(double* state, const double* q, const double* k, const double* v,
                            Gates gates, double scale, double* out) {
  for (int vi = 0; vi < kHeadSize; ++vi) {
    double* row = state + vi * kHeadSize;
    double old_v = 0;
    for (int ki = 0; ki < kHeadSize; ++ki) {
      row[ki] *= gates.g;
      old_v += k[ki] * row[ki];
    }
    const double new_v = gates.beta * v[vi] + (1.0 - gates.beta) * old_v;
    double o = 0;
    for (int ki = 0; ki < kHeadSize; ++ki) {
      row[ki] = (row[ki] - k[ki] * old_v) + k[ki] * new_v;
      o += q[ki] * row[ki];
    }
    out[vi] = scale * o;
  }
}

/// Copies n elements starting at element `first` of a tensor of any dtype into doubles.
inline void load_doubles(const HostTensor& tensor, std::int64_t first, int n, double* dst) {
  for (int i = 0; i < n; ++i) dst[i] = tensor.get(first + i);
}

/// The inputs of the recurrence, shared by decode ([B, 1, heads, 128]) and prefill
/// ([T, heads, 128]): both index q/k/v/a/b by a row r (a batch element or a token) and a head.
struct TokenInputs {
  const HostTensor& q;
  const HostTensor& k;
  const HostTensor& v;
  const HostTensor& A_log;
  const HostTensor& a;
  const HostTensor& dt_bias;
  const HostTensor& b;
  double scale;

  explicit TokenInputs(const InputSet& inputs)
      : q(inputs.at("q")),
        k(inputs.at("k")),
        v(inputs.at("v")),
        A_log(inputs.at("A_log")),
        a(inputs.at("a")),
        dt_bias(inputs.at("dt_bias")),
        b(inputs.at("b")),
        scale(output_scale(inputs)) {}
};

/// Applies row r's token of value head h to `state` and writes its output row.
inline void apply_token(const TokenInputs& in, std::int64_t r, int h, double* state,
                        HostTensor& output) {
  const std::int64_t head = r * kVHeads + h;  // index into [.., 8] and [.., 8, 128]
  const std::int64_t qk_row = (r * kQKHeads + h / kVHeadsPerQKHead) * kHeadSize;
  double q[kHeadSize], k[kHeadSize], v[kHeadSize], out[kHeadSize];
  load_doubles(in.q, qk_row, kHeadSize, q);
  load_doubles(in.k, qk_row, kHeadSize, k);
  load_doubles(in.v, head * kHeadSize, kHeadSize, v);
  const Gates g = gates(in.A_log.get(h), in.a.get(head), in.dt_bias.get(h), in.b.get(head));
  delta_rule_step(state, q, k, v, g, in.scale, out);
  for (int i = 0; i < kHeadSize; ++i) output.set(head * kHeadSize + i, out[i]);
}

/// Loads the float32 state matrix starting at element `first` (zeros when there is no state).
inline void load_state(const HostTensor* state, std::int64_t first, double* dst) {
  for (int i = 0; i < kStateElements; ++i) dst[i] = state ? state->data<float>()[first + i] : 0.0;
}

inline void store_state(const double* src, HostTensor& new_state, std::int64_t first) {
  float* dst = new_state.data<float>() + first;
  for (int i = 0; i < kStateElements; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace kh::gdn
