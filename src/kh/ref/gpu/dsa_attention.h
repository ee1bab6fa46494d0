// GPU reference of dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64, in three passes over a
// scratch array of logits so that every thread does one small independent job:
//   1. one thread per (token, head, selected slot): the 576-wide dot product (double);
//   2. one thread per (token, head): max, softmax weights and sum in slot order, base-2 lse;
//   3. one thread per (token, head, output column): the weighted sum of the selected rows'
//      values (consecutive threads read consecutive columns of a row).
// Slots holding -1 are padding. An index outside the cache, which the CPU reference rejects, is
// treated as padding here (a device cannot raise); the generators never produce one.
#pragma once

#include <cmath>
#include <cstdint>

#include "kh/core/host_device.h"
#include "kh/ref/gpu/element_load.h"
#include "kh/ref/gpu/reference_args.h"

namespace kh::gpuref {

namespace dsa_attention {

constexpr int kHeads = 16, kCkvDim = 512, kKpeDim = 64, kTopK = 2048;

struct Logits {
  const std::uint16_t *q_nope, *q_pe, *ckv, *kpe;  // bf16
  const std::int32_t* indices;                     // [tokens, 2048]
  std::int64_t slots;                              // num_pages * page_size
  double sm_scale;
  double* logits;  // [tokens, heads, 2048]
  bool* valid;     // [tokens, 2048] (written by head 0 of each slot)

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t j = i % kTopK, head = i / kTopK, t = head / kHeads;
    const std::int32_t row = indices[t * kTopK + j];
    const bool ok = row >= 0 && row < slots;
    if (head % kHeads == 0) valid[t * kTopK + j] = ok;
    if (!ok) return;
    double dot_ckv = 0, dot_kpe = 0;
    for (int d = 0; d < kCkvDim; ++d)
      dot_ckv += static_cast<double>(load_bf16(q_nope, head * kCkvDim + d)) *
                 load_bf16(ckv, static_cast<std::int64_t>(row) * kCkvDim + d);
    for (int d = 0; d < kKpeDim; ++d)
      dot_kpe += static_cast<double>(load_bf16(q_pe, head * kKpeDim + d)) *
                 load_bf16(kpe, static_cast<std::int64_t>(row) * kKpeDim + d);
    logits[i] = (dot_ckv + dot_kpe) * sm_scale;
  }
};

struct Softmax {
  const bool* valid;
  double* logits;  // in: logits; out: exp(logit - max), 0 for padding
  double* sum;     // [tokens, heads]
  float* lse;

  KH_HD void operator()(std::int64_t head) const {
    const std::int64_t t = head / kHeads;
    double* row = logits + head * kTopK;
    double max_logit = -INFINITY;
    for (int j = 0; j < kTopK; ++j)
      if (valid[t * kTopK + j] && row[j] > max_logit) max_logit = row[j];
    double s = 0;
    for (int j = 0; j < kTopK; ++j) {
      row[j] = valid[t * kTopK + j] ? exp(row[j] - max_logit) : 0.0;
      s += row[j];
    }
    sum[head] = s;
    // All padding: exp-sum over nothing, lse = -inf (and a zero output).
    lse[head] =
        s > 0 ? static_cast<float>((max_logit + log(s)) / 0.69314718055994530942) : -INFINITY;
  }
};

struct Combine {
  const std::uint16_t* ckv;
  const std::int32_t* indices;
  const bool* valid;
  const double* weights;
  const double* sum;
  std::uint16_t* output;  // bf16 [tokens, heads, 512]

  KH_HD void operator()(std::int64_t i) const {
    const std::int64_t d = i % kCkvDim, head = i / kCkvDim, t = head / kHeads;
    double acc = 0;
    for (int j = 0; j < kTopK; ++j)
      if (valid[t * kTopK + j])
        acc += weights[head * kTopK + j] *
               load_bf16(ckv, static_cast<std::int64_t>(indices[t * kTopK + j]) * kCkvDim + d);
    store_bf16(output, i, sum[head] > 0 ? static_cast<float>(acc / sum[head]) : 0.0f);
  }
};

}  // namespace dsa_attention

template <class Exec>
void dsa_sparse_attention_reference(Exec& exec, const ReferenceArgs& args) {
  using namespace dsa_attention;
  const std::int64_t tokens = args.axis("num_tokens");
  const std::int64_t heads = tokens * kHeads;
  auto* logits = static_cast<double*>(exec.scratch(sizeof(double) * heads * kTopK));
  auto* valid = static_cast<bool*>(exec.scratch(sizeof(bool) * tokens * kTopK));
  auto* sum = static_cast<double*>(exec.scratch(sizeof(double) * heads));
  const auto* indices = args.in<std::int32_t>("sparse_indices");
  const auto* ckv = args.in<std::uint16_t>("ckv_cache");

  Logits pass1{args.in<std::uint16_t>("q_nope"),
               args.in<std::uint16_t>("q_pe"),
               ckv,
               args.in<std::uint16_t>("kpe_cache"),
               indices,
               args.axis("num_pages") * args.axis("page_size"),
               args.scalar("sm_scale", 0.0),
               logits,
               valid};
  exec.for_each(heads * kTopK, pass1);
  exec.for_each(heads, Softmax{valid, logits, sum, args.out<float>("lse")});
  exec.for_each(heads * kCkvDim,
                Combine{ckv, indices, valid, logits, sum, args.out<std::uint16_t>("output")});
}

}  // namespace kh::gpuref
