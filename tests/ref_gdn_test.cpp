// The GDN CPU references against hand-derived cases: the gates, the delta rule on one head,
// GVA head mapping, the optional state, and the varlen prefill recurrence.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/gdn_step.h"
#include "test_support.h"

namespace kh {
namespace {

using test::axes_with;
using test::bf16;
using test::expect_bf16_near;
using test::zero_inputs;

constexpr int D = 128;
const char* const kDecode = "gdn_decode_qk4_v8_d128_k_last";
const char* const kPrefill = "gdn_prefill_qk4_v8_d128_k_last";
const double kDefaultScale = 1.0 / std::sqrt(128.0);

void fill_uniform(HostTensor& t, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, dist(rng));
}

// Decode: element offsets of [B,1,H,D] tensors and the [B,8,V,K] state.
std::int64_t qk_at(std::int64_t b, int head, int d) {
  return (b * 4 + head) * D + d;
}
std::int64_t v_at(std::int64_t b, int head, int d) {
  return (b * 8 + head) * D + d;
}
std::int64_t state_at(std::int64_t b, int head, int v, int k) {
  return ((b * 8 + head) * D + v) * D + k;
}

TEST(RefGdnGates, SoftplusIsPyTorchsAndGatesHaveKnownValues) {
  EXPECT_DOUBLE_EQ(gdn::softplus(0.0), std::log(2.0));
  EXPECT_EQ(gdn::softplus(25.0), 25.0);  // above the threshold 20 it is the identity
  EXPECT_DOUBLE_EQ(gdn::softplus(-3.0), std::log1p(std::exp(-3.0)));
  // A_log = 0, a + dt_bias = 0: g = exp(-1 * ln 2) = 1/2; b = 0: beta = 1/2.
  const gdn::Gates half = gdn::gates(0.0, 0.0, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(half.g, 0.5);
  EXPECT_DOUBLE_EQ(half.beta, 0.5);
  // exp(A_log) = 2: g = exp(-2 ln 2) = 1/4; a and dt_bias add before softplus.
  const gdn::Gates quarter = gdn::gates(std::log(2.0), 1.5, -1.5, std::log(3.0));
  EXPECT_DOUBLE_EQ(quarter.g, 0.25);
  EXPECT_DOUBLE_EQ(quarter.beta, 0.75);  // sigmoid(ln 3) = 3/4
  EXPECT_DOUBLE_EQ(gdn::gates(-3.0, 30.0, -5.0, 0.0).g, std::exp(-std::exp(-3.0) * 25.0));
}

class RefGdnDecode : public ::testing::Test {
 protected:
  Definition def = test::shipped_definition(kDecode);
  AxisValues axes = axes_with(def, {{"batch_size", 2}});
  InputSet inputs = zero_inputs(def, axes);
  HostTensor& q = inputs.at("q");
  HostTensor& k = inputs.at("k");
  HostTensor& v = inputs.at("v");
  HostTensor& state = inputs.at("state");
};

TEST_F(RefGdnDecode, ZeroStateGivesScaleBetaKDotQTimesVWithGvaHeadMapping) {
  // b = 0 -> beta = 1/2 everywhere; state zero, so g does not matter.
  for (int b = 0; b < 2; ++b) {
    q.set(qk_at(b, 0, 0), 2.0);
    q.set(qk_at(b, 0, 1), 1.0);
    k.set(qk_at(b, 0, 0), 1.0);
    k.set(qk_at(b, 0, 1), 0.5);  // k.q = 2.5 for q/k head 0
    q.set(qk_at(b, 1, 2), -1.0);
    k.set(qk_at(b, 1, 2), 1.0);  // k.q = -1 for q/k head 1
    for (int d = 0; d < D; ++d) {
      v.set(v_at(b, 0, d), (d % 8) - 3);  // value heads 0 and 1 read q/k head 0
      v.set(v_at(b, 1, d), 0.25 * (d % 5));
      v.set(v_at(b, 2, d), 1.0 + b);  // value heads 2 and 3 read q/k head 1
    }
  }
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  const HostTensor& output = out.at("output");
  const HostTensor& new_state = out.at("new_state");
  for (int b = 0; b < 2; ++b) {
    for (int d = 0; d < D; ++d) {
      expect_bf16_near(output.get(v_at(b, 0, d)), kDefaultScale * 0.5 * 2.5 * ((d % 8) - 3),
                       "head 0");
      expect_bf16_near(output.get(v_at(b, 1, d)), kDefaultScale * 0.5 * 2.5 * 0.25 * (d % 5),
                       "head 1");
      expect_bf16_near(output.get(v_at(b, 2, d)), kDefaultScale * 0.5 * -1.0 * (1.0 + b), "head 2");
      for (int h = 3; h < 8; ++h) EXPECT_EQ(output.get(v_at(b, h, d)), 0.0) << h;
      // S' = beta k v^T, stored k-last: new_state[b,h,v,k] = beta * v[v] * k[k].
      EXPECT_EQ(new_state.get(state_at(b, 0, d, 0)), 0.5 * ((d % 8) - 3));
      EXPECT_EQ(new_state.get(state_at(b, 0, d, 1)), 0.25 * ((d % 8) - 3));
      EXPECT_EQ(new_state.get(state_at(b, 0, d, 2)), 0.0);
      EXPECT_EQ(new_state.get(state_at(b, 2, d, 2)), 0.5 * (1.0 + b));
    }
  }
}

TEST_F(RefGdnDecode, ZeroKeyOnlyDecaysTheStateWithPerHeadGates) {
  // state = identity on every head; k = 0, so S' = g S and out[v] = scale * g * q[v].
  HostTensor& A_log = inputs.at("A_log");
  A_log.set(1, std::log(2.0));  // head 1: g = 1/4; head 0 (A_log 0, a + dt_bias 0): g = 1/2
  HostTensor& a = inputs.at("a");
  HostTensor& dt_bias = inputs.at("dt_bias");
  dt_bias.set(2, 2.0);
  a.set(2, -2.0);      // batch 0, head 2: a + dt_bias = 0 again -> g = 1/2
  a.set(8 + 3, 30.0);  // batch 1, head 3: softplus(30) = 30 -> g = exp(-30)
  inputs.at("scale").set(0, 0.5);
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < 8; ++h)
      for (int d = 0; d < D; ++d) state.set(state_at(b, h, d, d), 1.0);
    for (int hq = 0; hq < 4; ++hq)
      for (int d = 0; d < D; ++d) q.set(qk_at(b, hq, d), d % 3 - 1);
  }
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  auto g_of = [](int b, int h) {
    if (h == 1) return 0.25;
    if (b == 1 && h == 3) return std::exp(-30.0);
    if (b == 1 && h == 2) return std::exp(-std::log1p(std::exp(2.0)));  // softplus(2)
    return 0.5;
  };
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 8; ++h) {
      const double g = g_of(b, h);
      for (int d = 0; d < D; ++d) {
        EXPECT_NEAR(out.at("new_state").get(state_at(b, h, d, d)), g, g * 1e-6);
        EXPECT_EQ(out.at("new_state").get(state_at(b, h, d, (d + 1) % D)), 0.0);
        expect_bf16_near(out.at("output").get(v_at(b, h, d)), 0.5 * g * (d % 3 - 1),
                         "b " + std::to_string(b) + " h " + std::to_string(h));
      }
    }
}

TEST_F(RefGdnDecode, DeltaRuleOnIdentityStateByHand) {
  // S = I, k = e_0, g = 1/2, beta = 1/2 (all gate inputs zero). By hand, in V x K (k-last):
  //   gS = I/2;  old_v = (gS)^T k = e_0 / 2;  new_v = v/2 + old_v/2;
  //   S' = gS + k (new_v - old_v)^T  ->  M'[v][0] = v[v]/2 + delta(v,0)/4,  M'[v][k>0] = I/2.
  // With q = e_0 + e_1: out[v] = scale * (M'[v][0] + M'[v][1]).
  for (int d = 0; d < D; ++d) state.set(state_at(0, 0, d, d), 1.0);
  k.set(qk_at(0, 0, 0), 1.0);
  q.set(qk_at(0, 0, 0), 1.0);
  q.set(qk_at(0, 0, 1), 1.0);
  for (int d = 0; d < D; ++d) v.set(v_at(0, 0, d), d / 16.0 - 2.0);
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int d = 0; d < D; ++d) {
    const double vd = d / 16.0 - 2.0;
    const double col0 = vd / 2 + (d == 0 ? 0.25 : 0.0);
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 0, d, 0)), col0) << d;
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 0, d, d == 0 ? 1 : d)),
                     d == 0 ? 0.0 : 0.5);
    expect_bf16_near(out.at("output").get(v_at(0, 0, d)),
                     kDefaultScale * (col0 + (d == 1 ? 0.5 : 0.0)), "v " + std::to_string(d));
  }
}

TEST_F(RefGdnDecode, AbsentStateEqualsZeroState) {
  std::mt19937 rng(7);
  for (const char* name : {"q", "k", "v", "a", "b", "A_log", "dt_bias"})
    fill_uniform(inputs.at(name), rng, -1.0, 1.0);
  const OutputSet with_zero_state = run_cpu_reference(def, axes, inputs);
  InputSet without = inputs.clone();
  for (auto& item : without)
    if (item.name == "state") item = {"state", HostTensor(), false};
  const OutputSet with_absent_state = run_cpu_reference(def, axes, without);
  EXPECT_TRUE(with_zero_state.at("output").bytes_equal(with_absent_state.at("output")));
  EXPECT_TRUE(with_zero_state.at("new_state").bytes_equal(with_absent_state.at("new_state")));
  EXPECT_NE(with_zero_state.at("output").get(0), 0.0);
}

TEST_F(RefGdnDecode, BadShapeOrMissingInputIsAnError) {
  InputSet bad = inputs.clone();
  bad[0].tensor = HostTensor(DType::kBFloat16, {2, 1, 4, 64});
  try {
    run_cpu_reference(def, axes, bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'q'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 1, 4, 64]"), std::string::npos) << e.what();
  }
  InputSet missing = inputs.clone();
  missing[1].present = false;  // k is not optional
  EXPECT_THROW(run_cpu_reference(def, axes, missing), Error);
  AxisValues wrong_axes = axes;
  wrong_axes["num_v_heads"] = 16;
  EXPECT_THROW(run_cpu_reference(def, wrong_axes, inputs), Error);
}

// Prefill: offsets of [T,H,D] tensors and the [N,8,V,K] state.
std::int64_t tok_at(std::int64_t t, int heads, int head, int d) {
  return (t * heads + head) * D + d;
}

class RefGdnPrefill : public ::testing::Test {
 protected:
  Definition def = test::shipped_definition(kPrefill);

  static AxisValues prefill_axes(const Definition& def, std::int64_t tokens, std::int64_t seqs) {
    return axes_with(def,
                     {{"total_seq_len", tokens}, {"num_seqs", seqs}, {"len_cu_seqlens", seqs + 1}});
  }
  static void set_cu_seqlens(InputSet& inputs, const std::vector<std::int64_t>& cu) {
    for (std::size_t i = 0; i < cu.size(); ++i) inputs.at("cu_seqlens").set(i, cu[i]);
  }
};

TEST_F(RefGdnPrefill, TwoTokenDeltaRuleByHand) {
  // Zero state, g = beta = 1/2. Token 0: k = e_0, v = v1 -> S1 = v1 e_0^T / 2 (V x K).
  // Token 1: k = e_1, v = v2: gS1 = v1 e_0^T / 4, old_v = gS1 e_1 = 0, new_v = v2 / 2
  //   -> S2 = v1 e_0^T / 4 + v2 e_1^T / 2; with q = e_0 + e_1: out = scale (v1/4 + v2/2).
  const AxisValues axes = prefill_axes(def, 2, 1);
  InputSet inputs = zero_inputs(def, axes);
  set_cu_seqlens(inputs, {0, 2});
  HostTensor &q = inputs.at("q"), &k = inputs.at("k"), &v = inputs.at("v");
  k.set(tok_at(0, 4, 0, 0), 1.0);
  k.set(tok_at(1, 4, 0, 1), 1.0);
  for (int t = 0; t < 2; ++t) {
    q.set(tok_at(t, 4, 0, 0), 1.0);
    q.set(tok_at(t, 4, 0, 1), 1.0);
  }
  auto v1 = [](int d) { return d / 32.0; };
  auto v2 = [](int d) { return 1.0 - d / 64.0; };
  for (int d = 0; d < D; ++d) {
    v.set(tok_at(0, 8, 0, d), v1(d));
    v.set(tok_at(1, 8, 0, d), v2(d));
    v.set(tok_at(0, 8, 1, d), 2 * v1(d));  // value head 1 shares q/k head 0 (GVA)
    v.set(tok_at(1, 8, 1, d), 2 * v2(d));
  }
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  for (int d = 0; d < D; ++d) {
    expect_bf16_near(out.at("output").get(tok_at(0, 8, 0, d)), kDefaultScale * v1(d) / 2, "t0");
    expect_bf16_near(out.at("output").get(tok_at(1, 8, 0, d)),
                     kDefaultScale * (v1(d) / 4 + v2(d) / 2), "t1");
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 0, d, 0)), v1(d) / 4);
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 0, d, 1)), v2(d) / 2);
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 1, d, 0)), v1(d) / 2);
    EXPECT_DOUBLE_EQ(out.at("new_state").get(state_at(0, 1, d, 1)), v2(d));
    EXPECT_EQ(out.at("new_state").get(state_at(0, 2, d, 0)), 0.0);
  }
}

TEST_F(RefGdnPrefill, TwoTokensEqualTwoDecodeSteps) {
  const AxisValues axes = prefill_axes(def, 2, 1);
  InputSet prefill = zero_inputs(def, axes);
  set_cu_seqlens(prefill, {0, 2});
  std::mt19937 rng(11);
  for (const char* name : {"q", "k", "v", "a", "b", "A_log", "dt_bias"})
    fill_uniform(prefill.at(name), rng, -1.0, 1.0);
  fill_uniform(prefill.at("state"), rng, -0.5, 0.5);
  prefill.at("scale").set(0, 0.2);
  const OutputSet whole = run_cpu_reference(def, axes, prefill);

  const Definition decode_def = test::shipped_definition(kDecode);
  const AxisValues decode_axes = axes_with(decode_def, {{"batch_size", 1}});
  HostTensor state = prefill.at("state").clone();
  for (int t = 0; t < 2; ++t) {
    InputSet step = zero_inputs(decode_def, decode_axes);
    for (const char* name : {"q", "k", "v", "a", "b"}) {
      HostTensor& dst = step.at(name);
      for (std::int64_t i = 0; i < dst.numel(); ++i)
        dst.set(i, prefill.at(name).get(t * dst.numel() + i));
    }
    for (const char* name : {"A_log", "dt_bias", "scale"}) step.at(name) = prefill.at(name).clone();
    step.at("state") = state.clone();
    const OutputSet out = run_cpu_reference(decode_def, decode_axes, step);
    for (std::int64_t i = 0; i < 8 * D; ++i) {
      const double expected = out.at("output").get(i);
      const double actual = whole.at("output").get(t * 8 * D + i);
      // Token 0 is the same computation; token 1 differs only by the float32 round trip of the
      // state between the two decode calls (prefill keeps it in double).
      if (t == 0)
        EXPECT_EQ(actual, expected) << i;
      else
        EXPECT_NEAR(actual, expected, std::abs(expected) / 128 + 1e-6) << i;
    }
    state = out.at("new_state").clone();
  }
  for (std::int64_t i = 0; i < state.numel(); ++i)
    ASSERT_NEAR(whole.at("new_state").get(i), state.get(i), 1e-5) << i;
}

TEST_F(RefGdnPrefill, SequencesStartFromTheirOwnStateWithCuSeqlens013) {
  // cu_seqlens [0, 1, 3]; k = 0 so each token only decays: S' = S/2, out = scale * S' q.
  // Sequence 0 starts from I, sequence 1 from 2I (not from sequence 0's final state).
  const AxisValues axes = prefill_axes(def, 3, 2);
  InputSet inputs = zero_inputs(def, axes);
  set_cu_seqlens(inputs, {0, 1, 3});
  for (int h = 0; h < 8; ++h)
    for (int d = 0; d < D; ++d) {
      inputs.at("state").set(state_at(0, h, d, d), 1.0);
      inputs.at("state").set(state_at(1, h, d, d), 2.0);
    }
  for (int t = 0; t < 3; ++t) inputs.at("q").set(tok_at(t, 4, 0, 5), 1.0);  // q = e_5, head 0
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  const double expected_out[3] = {0.5, 1.0, 0.5};  // times scale, at v = 5 of heads 0 and 1
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 8; ++h)
      for (int d = 0; d < D; ++d) {
        const double e = (h < 2 && d == 5) ? kDefaultScale * expected_out[t] : 0.0;
        expect_bf16_near(out.at("output").get(tok_at(t, 8, h, d)), e, "token output");
      }
  for (int s = 0; s < 2; ++s)
    for (int d = 0; d < D; ++d) EXPECT_EQ(out.at("new_state").get(state_at(s, 3, d, d)), 0.5);
}

TEST_F(RefGdnPrefill, ZeroLengthSequenceLeavesZeroNewStateDespiteInitialState) {
  const AxisValues axes = prefill_axes(def, 2, 3);
  InputSet inputs = zero_inputs(def, axes);
  set_cu_seqlens(inputs, {0, 0, 2, 2});
  std::mt19937 rng(3);
  for (const char* name : {"q", "k", "v", "a", "b", "state"})
    fill_uniform(inputs.at(name), rng, -1.0, 1.0);
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  const HostTensor& new_state = out.at("new_state");
  const std::int64_t per_seq = 8 * D * D;
  double middle = 0;
  for (std::int64_t i = 0; i < per_seq; ++i) {
    ASSERT_EQ(new_state.get(i), 0.0);
    ASSERT_EQ(new_state.get(2 * per_seq + i), 0.0);
    middle += std::abs(new_state.get(per_seq + i));
  }
  EXPECT_GT(middle, 0.0);
}

TEST_F(RefGdnPrefill, CuSeqlensOutOfRangeIsAnError) {
  const AxisValues axes = prefill_axes(def, 2, 1);
  InputSet inputs = zero_inputs(def, axes);
  set_cu_seqlens(inputs, {0, 3});
  EXPECT_THROW(run_cpu_reference(def, axes, inputs), Error);
  set_cu_seqlens(inputs, {-1, 2});
  EXPECT_THROW(run_cpu_reference(def, axes, inputs), Error);
}

}  // namespace
}  // namespace kh
