// CPU reference of gdn_prefill_qk4_v8_d128_k_last: the gated delta rule of gdn_decode applied
// token by token over each sequence of a varlen batch (int64 cu_seqlens), emitting the output
// after every token and the state after each sequence's last token. The state stays in double
// between the tokens of a sequence.
#include <algorithm>
#include <vector>

#include "kh/core/error.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/gdn_step.h"
#include "kh/ref/reference_call.h"

namespace kh {

void gdn_prefill_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                           OutputSet& outputs) {
  using namespace gdn;
  require_gdn_axes(def, axes);
  ref::check_call(def, axes, inputs, outputs, {"scale"});
  const std::int64_t total = ref::axis_value(def, axes, "total_seq_len");
  const std::int64_t num_seqs = ref::axis_value(def, axes, "num_seqs");
  if (ref::axis_value(def, axes, "len_cu_seqlens") != num_seqs + 1)
    fail("{}: len_cu_seqlens must be num_seqs + 1 = {}, got {}", def.name, num_seqs + 1,
         ref::axis_value(def, axes, "len_cu_seqlens"));

  const HostTensor& q = inputs.at("q");
  const HostTensor& k = inputs.at("k");
  const HostTensor& v = inputs.at("v");
  const HostTensor* state = inputs.find("state");
  const HostTensor& A_log = inputs.at("A_log");
  const HostTensor& a = inputs.at("a");
  const HostTensor& dt_bias = inputs.at("dt_bias");
  const HostTensor& b = inputs.at("b");
  const std::int64_t* cu_seqlens = inputs.at("cu_seqlens").data<std::int64_t>();
  const double scale = output_scale(inputs);
  HostTensor& output = outputs.at("output");
  HostTensor& new_state = outputs.at("new_state");

  for (std::int64_t i = 0; i <= num_seqs; ++i)
    if (cu_seqlens[i] < 0 || cu_seqlens[i] > total)
      fail("{}: cu_seqlens[{}] = {} is outside [0, total_seq_len = {}]", def.name, i, cu_seqlens[i],
           total);

  std::vector<double> head_state(kStateElements);
  double qt[kHeadSize], kt[kHeadSize], vt[kHeadSize], out[kHeadSize];
  for (std::int64_t seq = 0; seq < num_seqs; ++seq) {
    const std::int64_t start = cu_seqlens[seq];
    const std::int64_t end = cu_seqlens[seq + 1];
    // The reference skips empty (or reversed) sequences: their new_state stays zero even when an
    // initial state was given.
    if (end <= start) continue;
    for (int h = 0; h < kVHeads; ++h) {
      const std::int64_t state_first = (seq * kVHeads + h) * kStateElements;
      if (state) {
        const float* s = state->data<float>() + state_first;
        for (int i = 0; i < kStateElements; ++i) head_state[i] = s[i];
      } else {
        std::fill(head_state.begin(), head_state.end(), 0.0);
      }
      for (std::int64_t t = start; t < end; ++t) {
        const std::int64_t head = t * kVHeads + h;  // index into [T, 8] and [T, 8, 128]
        const std::int64_t qk_row = (t * kQKHeads + h / kVHeadsPerQKHead) * kHeadSize;
        load_doubles(q, qk_row, kHeadSize, qt);
        load_doubles(k, qk_row, kHeadSize, kt);
        load_doubles(v, head * kHeadSize, kHeadSize, vt);
        const Gates gt = gates(A_log.get(h), a.get(head), dt_bias.get(h), b.get(head));
        delta_rule_step(head_state.data(), qt, kt, vt, gt, scale, out);
        for (int i = 0; i < kHeadSize; ++i) output.set(head * kHeadSize + i, out[i]);
      }
      float* ns = new_state.data<float>() + state_first;
      for (int i = 0; i < kStateElements; ++i) ns[i] = static_cast<float>(head_state[i]);
    }
  }
}

}  // namespace kh
