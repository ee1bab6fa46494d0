// CPU reference of gdn_prefill_qk4_v8_d128_k_last: the gated delta rule of gdn_decode applied
// token by token over each sequence of a varlen batch (int64 cu_seqlens), emitting the output
// after every token and the state after each sequence's last token. The state stays in double
// between the tokens of a sequence.
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

  const TokenInputs in(inputs);
  const HostTensor* state = inputs.find("state");
  const std::int64_t* cu_seqlens = inputs.at("cu_seqlens").data<std::int64_t>();
  HostTensor& output = outputs.at("output");
  HostTensor& new_state = outputs.at("new_state");

  for (std::int64_t i = 0; i <= num_seqs; ++i)
    if (cu_seqlens[i] < 0 || cu_seqlens[i] > total)
      fail("{}: cu_seqlens[{}] = {} is outside [0, total_seq_len = {}]", def.name, i, cu_seqlens[i],
           total);

  std::vector<double> head_state(kStateElements);
  for (std::int64_t seq = 0; seq < num_seqs; ++seq) {
    const std::int64_t start = cu_seqlens[seq];
    const std::int64_t end = cu_seqlens[seq + 1];
    // The reference skips empty (or reversed) sequences: their new_state stays zero even when an
    // initial state was given.
    if (end <= start) continue;
    for (int h = 0; h < kVHeads; ++h) {
      const std::int64_t state_first = (seq * kVHeads + h) * kStateElements;
      load_state(state, state_first, head_state.data());
      for (std::int64_t t = start; t < end; ++t) apply_token(in, t, h, head_state.data(), output);
      store_state(head_state.data(), new_state, state_first);
    }
  }
}

}  // namespace kh
