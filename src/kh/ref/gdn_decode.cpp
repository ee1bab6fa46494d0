// CPU reference of gdn_decode_qk4_v8_d128_k_last: one token of the gated delta rule per batch
// element and value head, starting from `state` (zeros when absent).
#include <algorithm>
#include <vector>

#include "kh/ref/cpu_reference.h"
#include "kh/ref/gdn_step.h"
#include "kh/ref/reference_call.h"

namespace kh {

void gdn_decode_reference(const Definition& def, const AxisValues& axes, const InputSet& inputs,
                          OutputSet& outputs) {
  using namespace gdn;
  require_gdn_axes(def, axes);
  ref::require_axis(def, axes, "seq_len", 1);
  ref::check_call(def, axes, inputs, outputs, {"scale"});
  const std::int64_t batch = ref::axis_value(def, axes, "batch_size");

  const HostTensor& q = inputs.at("q");
  const HostTensor& k = inputs.at("k");
  const HostTensor& v = inputs.at("v");
  const HostTensor* state = inputs.find("state");
  const HostTensor& A_log = inputs.at("A_log");
  const HostTensor& a = inputs.at("a");
  const HostTensor& dt_bias = inputs.at("dt_bias");
  const HostTensor& b = inputs.at("b");
  const double scale = output_scale(inputs);
  HostTensor& output = outputs.at("output");
  HostTensor& new_state = outputs.at("new_state");

  std::vector<double> head_state(kStateElements);
  double qh[kHeadSize], kk[kHeadSize], vh[kHeadSize], out[kHeadSize];
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    for (int h = 0; h < kVHeads; ++h) {
      const std::int64_t head = bi * kVHeads + h;  // index into [B, 1, 8] and [B, 8, ...]
      const std::int64_t qk_row = (bi * kQKHeads + h / kVHeadsPerQKHead) * kHeadSize;
      load_doubles(q, qk_row, kHeadSize, qh);
      load_doubles(k, qk_row, kHeadSize, kk);
      load_doubles(v, head * kHeadSize, kHeadSize, vh);
      const std::int64_t state_first = head * kStateElements;
      if (state) {
        const float* s = state->data<float>() + state_first;
        for (int i = 0; i < kStateElements; ++i) head_state[i] = s[i];
      } else {
        std::fill(head_state.begin(), head_state.end(), 0.0);
      }
      const Gates gh = gates(A_log.get(h), a.get(head), dt_bias.get(h), b.get(head));
      delta_rule_step(head_state.data(), qh, kk, vh, gh, scale, out);
      for (int i = 0; i < kHeadSize; ++i) output.set(head * kHeadSize + i, out[i]);
      float* ns = new_state.data<float>() + state_first;
      for (int i = 0; i < kStateElements; ++i) ns[i] = static_cast<float>(head_state[i]);
    }
  }
}

}  // namespace kh
