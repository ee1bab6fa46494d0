// CPU reference of gdn_decode_qk4_v8_d128_k_last: one token of the gated delta rule per batch
// element and value head, starting from `state` (zeros when absent).
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

  const TokenInputs in(inputs);
  const HostTensor* state = inputs.find("state");
  HostTensor& output = outputs.at("output");
  HostTensor& new_state = outputs.at("new_state");

  std::vector<double> head_state(kStateElements);
  for (std::int64_t bi = 0; bi < batch; ++bi) {
    for (int h = 0; h < kVHeads; ++h) {
      const std::int64_t state_first = (bi * kVHeads + h) * kStateElements;
      load_state(state, state_first, head_state.data());
      apply_token(in, bi, h, head_state.data(), output);
      store_state(head_state.data(), new_state, state_first);
    }
  }
}

}  // namespace kh
