// What the GDN prefill kernel emulation tests share: a workload of given axes, one call's inputs
// with the CPU reference's outputs, the kernels' argument struct over host tensors, and the two
// checks they make (the official tolerance against the reference; the same bits as another run).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gdn_prefill.cuh"
#include "kh/check/checker.h"
#include "kh/gen/input_generator.h"
#include "kh/ref/cpu_reference.h"
#include "test_support.h"

namespace kh::test {

constexpr const char* kGdnPrefill = "gdn_prefill_qk4_v8_d128_k_last";
constexpr unsigned char kOutputPoison = 0xff;  // NaN in bf16 and fp32: an unwritten output fails

inline Workload prefill_workload(const std::string& uuid, std::int64_t tokens, std::int64_t seqs) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"total_seq_len", tokens}, {"num_seqs", seqs}, {"len_cu_seqlens", seqs + 1}};
  return w;
}

struct PrefillCall {
  Definition def = shipped_definition(kGdnPrefill);
  InputSet inputs;
  OutputSet reference;
  AxisValues axes;
};

inline PrefillCall draw_prefill_call(const Workload& w, const std::string& variant,
                                     std::int64_t trial) {
  PrefillCall c;
  const InputGenerator gen(c.def, w, source_dir(), {kDefaultSeed, variant});
  c.axes = gen.axes();
  c.inputs = gen.generate(trial);
  c.reference = run_cpu_reference(c.def, c.axes, c.inputs);
  return c;
}

/// Outputs of the definition's shapes, every byte poisoned.
inline OutputSet poisoned_outputs(const PrefillCall& c) {
  OutputSet out = allocate_outputs(c.def, c.axes);
  for (auto& item : out) std::memset(item.tensor.bytes(), kOutputPoison, item.tensor.nbytes());
  return out;
}

template <typename T>
const T* tensor_or_null(const InputSet& in, const char* name) {
  const HostTensor* t = in.find(name);
  return t ? t->data<T>() : nullptr;
}

/// The kernels' arguments for a call on host tensors.
inline khk::gdn_prefill::PrefillArgs prefill_args(const InputSet& in, OutputSet& out) {
  khk::gdn_prefill::PrefillArgs args{};
  args.q = tensor_or_null<__nv_bfloat16>(in, "q");
  args.k = tensor_or_null<__nv_bfloat16>(in, "k");
  args.v = tensor_or_null<__nv_bfloat16>(in, "v");
  args.state = tensor_or_null<float>(in, "state");
  args.A_log = tensor_or_null<float>(in, "A_log");
  args.a = tensor_or_null<__nv_bfloat16>(in, "a");
  args.dt_bias = tensor_or_null<float>(in, "dt_bias");
  args.b = tensor_or_null<__nv_bfloat16>(in, "b");
  args.cu_seqlens = tensor_or_null<std::int64_t>(in, "cu_seqlens");
  const float* scale = tensor_or_null<float>(in, "scale");
  args.scale = scale && *scale != 0.0f ? *scale : 1.0f / std::sqrt(128.0f);
  args.output = out.at("output").data<__nv_bfloat16>();
  args.new_state = out.at("new_state").data<float>();
  args.total_tokens = in.at("q").shape().at(0);
  args.num_seqs = in.at("cu_seqlens").shape().at(0) - 1;
  return args;
}

/// A call of `tokens` tokens whose cu_seqlens are `cu` (set after drawing, the reference redone).
inline PrefillCall draw_prefill_call_with_cu_seqlens(std::int64_t tokens,
                                                     const std::vector<std::int64_t>& cu,
                                                     std::int64_t trial) {
  PrefillCall c = draw_prefill_call(
      prefill_workload("cu", tokens, static_cast<std::int64_t>(cu.size()) - 1), "", trial);
  std::copy(cu.begin(), cu.end(), c.inputs.at("cu_seqlens").data<std::int64_t>());
  c.reference = run_cpu_reference(c.def, c.axes, c.inputs);
  return c;
}

/// A 30-token call of two sequences with tokens outside both (0-3 before the first, 27-29 after
/// the last), whose output the reference leaves zero; only cu_seqlens[-1] == T is required.
inline PrefillCall draw_prefill_call_with_outside_tokens(std::int64_t trial) {
  return draw_prefill_call_with_cu_seqlens(30, {4, 15, 27}, trial);
}

/// The outputs of `run(args)` with new_state the state itself (a copy of the call's), as an
/// in-place call passes them; new_state's output is that state after the run.
template <class Run>
OutputSet run_in_place(const PrefillCall& c, Run&& run) {
  InputSet in = c.inputs.clone();
  OutputSet out = poisoned_outputs(c);
  khk::gdn_prefill::PrefillArgs args = prefill_args(in, out);
  args.new_state = in.at("state").data<float>();  // == args.state
  run(args);
  std::memcpy(out.at("new_state").bytes(), in.at("state").bytes(), in.at("state").nbytes());
  return out;
}

/// The outputs pass the official checks against the call's CPU reference.
inline void expect_passes(const PrefillCall& c, const OutputSet& out) {
  const CheckResult r =
      check_outputs(c.def, c.inputs, c.reference, out, official_options(c.def, false));
  EXPECT_TRUE(r.passed()) << r.message << " (max abs " << r.max_absolute_error << ", max rel "
                          << r.max_relative_error << ")";
}

/// Two runs' outputs are the same bits (`what` names the second).
inline void expect_same_bits(const OutputSet& a, const OutputSet& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(a[i].tensor.bytes_equal(b[i].tensor)) << a[i].name << ": " << what;
}

}  // namespace kh::test
