// The MoE CPU reference against hand-derived cases: DeepSeek-V3 grouped routing (group choice by
// top-2 sums, bias for selection only, weights from un-biased scores) and the expert computation
// on weights that are zero except a few planted FP8 entries (SiLU on the second half of GEMM1,
// transposed activation scales, local expert offset). The full-size weight tensors are allocated
// lazily, so only the pages of the one or two experts the tokens route to are touched.
#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/minifloat.h"
#include "kh/ref/cpu_reference.h"
#include "kh/ref/moe_routing.h"
#include "test_support.h"

namespace kh {
namespace {

using test::axes_with;
using test::zero_inputs;

using namespace moe;

const char* const kMoe = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048";

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
double silu(double x) {
  return x * sigmoid(x);
}

// Logits of T tokens: every expert at -10 except the given ones.
HostTensor make_logits(int tokens, const std::vector<std::pair<int, float>>& planted) {
  HostTensor logits(DType::kFloat32, {tokens, kNumExperts});
  for (int t = 0; t < tokens; ++t) {
    for (int e = 0; e < kNumExperts; ++e) logits.set(t * kNumExperts + e, -10.0);
    for (auto [e, value] : planted) logits.set(t * kNumExperts + e, value);
  }
  return logits;
}

std::set<int> experts_of(const MoeRoute& route) {
  return {route.expert, route.expert + kTopK};
}

// Expected weight of `expert`: its un-biased score over the sum of the selected ones, times rsf.
double expected_weight(const HostTensor& logits, int t, const std::set<int>& selected, int expert,
                       double rsf) {
  double sum = 0;
  for (int e : selected) sum += sigmoid(logits.get(t * kNumExperts + e));
  return sigmoid(logits.get(t * kNumExperts + expert)) / sum * rsf;
}

TEST(RefMoeRouting, KeepsTheFourBestGroupsByTopTwoSumThenTheEightBestExperts) {
  // Group scores (sum of the two best sigmoids): group 2 (experts 65, 66 at 2.2, 2.1) 1.79,
  // group 1 (32, 33 at 1.5) 1.64, group 0 (0, 1 at 1.0, 0.9) 1.44, group 3 (96, 97 at 0.5, 0.4)
  // 1.22, group 4 (128, 129 at 0.2) 1.10, group 5 (expert 160 at 6 alone) 0.998.
  // Group 5 is dropped although expert 160 has the best score of all.
  const HostTensor logits = make_logits(1, {{0, 1.0f},
                                            {1, 0.9f},
                                            {32, 1.5f},
                                            {33, 1.5f},
                                            {64, 2.0f},
                                            {65, 2.2f},
                                            {66, 2.1f},
                                            {96, 0.5f},
                                            {97, 0.4f},
                                            {128, 0.2f},
                                            {129, 0.2f},
                                            {160, 6.0f}});
  const HostTensor bias(DType::kBFloat16, {kNumExperts});
  const auto routes = moe_route(logits, bias, 2.5f);
  ASSERT_EQ(routes.size(), 1u);
  const std::set<int> expected = {0, 1, 32, 33, 64, 65, 66, 96};
  EXPECT_EQ(experts_of(routes[0]), expected);
  // Best first; the tie 32/33 goes to the lower index.
  const int order[kTopK] = {65, 66, 64, 32, 33, 0, 1, 96};
  for (int i = 0; i < kTopK; ++i) {
    EXPECT_EQ(routes[0].expert[i], order[i]) << i;
    EXPECT_NEAR(routes[0].weight[i], expected_weight(logits, 0, expected, order[i], 2.5), 1e-6);
  }
}

TEST(RefMoeRouting, BiasSelectsButWeightsUseUnbiasedScores) {
  // Expert 200 has logit -10 but bias 4: its group (6) and itself are selected first, yet its
  // weight comes from sigmoid(-10) ~ 4.5e-5. The rest: the 7 best of groups 2, 1, 0.
  const HostTensor logits = make_logits(2, {{0, 1.0f},
                                            {1, 0.9f},
                                            {32, 1.5f},
                                            {33, 1.4f},
                                            {64, 2.0f},
                                            {65, 2.2f},
                                            {66, 2.1f},
                                            {96, 0.5f}});
  HostTensor bias(DType::kBFloat16, {kNumExperts});
  bias.set(200, 4.0);
  bias.set(96, -1.0);  // pushes expert 96 (and group 3) out
  const auto routes = moe_route(logits, bias, 1.0f);
  ASSERT_EQ(routes.size(), 2u);
  const std::set<int> expected = {0, 1, 32, 33, 64, 65, 66, 200};
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(routes[t].expert[0], 200);
    EXPECT_EQ(experts_of(routes[t]), expected);
    for (int i = 0; i < kTopK; ++i)
      EXPECT_NEAR(routes[t].weight[i],
                  expected_weight(logits, t, expected, routes[t].expert[i], 1.0), 1e-6);
  }
  EXPECT_LT(routes[0].weight[0], 1e-4f);
}

TEST(RefMoeRouting, BadShapesAreErrors) {
  EXPECT_THROW(moe_route(HostTensor(DType::kFloat32, {2, 128}),
                         HostTensor(DType::kBFloat16, {kNumExperts}), 1.0f),
               Error);
  EXPECT_THROW(moe_route(HostTensor(DType::kFloat32, {2, kNumExperts}),
                         HostTensor(DType::kFloat32, {kNumExperts}), 1.0f),
               Error);
}

// ---------------------------------------------------------------- expert computation

// Route every token to experts 64, 65 (group 2), 0, 1, 32, 33, 96, 97.
const std::vector<std::pair<int, float>> kComputeLogits = {
    {64, 3.0f}, {65, 2.0f}, {0, 1.0f}, {1, 0.9f}, {32, 1.2f}, {33, 1.1f}, {96, 0.5f}, {97, 0.4f}};
const std::set<int> kComputeExperts = {0, 1, 32, 33, 64, 65, 96, 97};
constexpr double kRsf = 2.5;

class RefMoeCompute : public ::testing::Test {
 protected:
  Definition def = test::shipped_definition(kMoe);
  static constexpr int kTokens = 2;
  AxisValues axes = axes_with(def, {{"seq_len", kTokens}});
  InputSet inputs = zero_inputs(def, axes);
  HostTensor logits = make_logits(kTokens, kComputeLogits);

  void SetUp() override {
    inputs.at("routing_logits") = logits.clone();
    inputs.at("routed_scaling_factor").set(0, kRsf);
    // Activations: A[t, 0] = 1 * s[0, t], A[t, 130] = 2 * s[1, t]; the scale tensor is [56, T].
    HostTensor& hidden = inputs.at("hidden_states");
    HostTensor& scale = inputs.at("hidden_states_scale");
    for (int t = 0; t < kTokens; ++t) {
      hidden.set(t * kHidden + 0, 1.0);
      hidden.set(t * kHidden + 130, 2.0);
    }
    scale.set(0 * kTokens + 0, 0.5);   // token 0, k-block 0
    scale.set(1 * kTokens + 0, 0.25);  // token 0, k-block 1
    scale.set(0 * kTokens + 1, 1.0);   // token 1
    scale.set(1 * kTokens + 1, 1.0);
  }
  double activation(int t, int k) const {
    const double a0[2] = {0.5, 1.0}, a130[2] = {0.5, 2.0};
    return k == 0 ? a0[t] : a130[t];
  }

  // Local expert le: G[3] = 2 A[0] + 2 A[130] (W13 entries 2 and 1, block scales 1 and 2),
  // X2[3] = G[2048 + 3] = 1.5 A[0]; W2[10][3] = 1 at scale 0.5, W2[7000][3] = -2 at scale 1.
  void plant_expert(int le) {
    HostTensor& w13 = inputs.at("gemm1_weights");
    HostTensor& s13 = inputs.at("gemm1_weights_scale");
    HostTensor& w2 = inputs.at("gemm2_weights");
    HostTensor& s2 = inputs.at("gemm2_weights_scale");
    auto w13_at = [&](int n, int k) { return (std::int64_t{le} * kGemm1Out + n) * kHidden + k; };
    auto s13_at = [&](int n, int k) { return (le * 32 + n / kBlock) * 56 + k / kBlock; };
    auto w2_at = [&](int h, int i) { return (std::int64_t{le} * kHidden + h) * kIntermediate + i; };
    auto s2_at = [&](int h, int i) { return (le * 56 + h / kBlock) * 16 + i / kBlock; };
    w13.set(w13_at(3, 0), 2.0);
    s13.set(s13_at(3, 0), 1.0);
    w13.set(w13_at(3, 130), 1.0);
    s13.set(s13_at(3, 130), 2.0);
    w13.set(w13_at(kIntermediate + 3, 0), 1.0);
    s13.set(s13_at(kIntermediate + 3, 0), 1.5);
    w2.set(w2_at(10, 3), 1.0);
    s2.set(s2_at(10, 3), 0.5);
    w2.set(w2_at(7000, 3), -2.0);
    s2.set(s2_at(7000, 3), 1.0);
  }
  // The planted expert's output O[10] (O[7000] = -4 O[10]) for token t: C[3] * 0.5, with
  // C[3] = SiLU(X2[3]) * X1[3] -- SiLU on the second half.
  double planted_o10(int t) const {
    const double x1 = 2 * activation(t, 0) + 2 * activation(t, 130);
    const double x2 = 1.5 * activation(t, 0);
    return silu(x2) * x1 * 0.5;
  }
  void expect_output(const OutputSet& out, const std::vector<double>& o10_weighted) {
    const HostTensor& output = out.at("output");
    for (int t = 0; t < kTokens; ++t)
      for (int h = 0; h < kHidden; ++h) {
        const double expected = h == 10 ? o10_weighted[t] : h == 7000 ? -4 * o10_weighted[t] : 0.0;
        ASSERT_NEAR(output.get(t * kHidden + h), expected, std::abs(expected) / 256 + 1e-30)
            << "token " << t << " h " << h;
      }
  }
  double weight(int t, int expert) const {
    return expected_weight(logits, t, kComputeExperts, expert, kRsf);
  }
};

TEST_F(RefMoeCompute, PlantedExpertGivesTheHandComputedOutput) {
  inputs.at("local_expert_offset").set(0, 64);  // local 0..31 = global 64..95
  plant_expert(0);
  EXPECT_EQ(moe_local_experts_used(inputs), (std::vector<int>{0, 1}));
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  // The values differ from SiLU(X1) * X2 (the other gate convention) by far more than bf16.
  EXPECT_GT(std::abs(planted_o10(0) - silu(2 * 0.5 + 2 * 0.5) * 0.75 * 0.5), 0.1);
  expect_output(out, {weight(0, 64) * planted_o10(0), weight(1, 64) * planted_o10(1)});
}

TEST_F(RefMoeCompute, OffsetDecidesWhichGlobalExpertOwnsTheLocalWeights) {
  inputs.at("local_expert_offset").set(0, 65);  // local 0 = global 65; 64 is not local
  plant_expert(0);
  EXPECT_EQ(moe_local_experts_used(inputs), (std::vector<int>{0, 31}));  // 65 and 96
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  expect_output(out, {weight(0, 65) * planted_o10(0), weight(1, 65) * planted_o10(1)});
}

TEST_F(RefMoeCompute, NegativeOffsetSkipsExpertsBelowZero) {
  inputs.at("local_expert_offset").set(0, -16);  // local 16..31 = global 0..15
  plant_expert(16);                              // global expert 0
  EXPECT_EQ(moe_local_experts_used(inputs), (std::vector<int>{16, 17}));
  const OutputSet out = run_cpu_reference(def, axes, inputs);
  expect_output(out, {weight(0, 0) * planted_o10(0), weight(1, 0) * planted_o10(1)});
}

TEST_F(RefMoeCompute, NoLocalSelectedExpertGivesZeroOutput) {
  plant_expert(0);
  for (int offset : {128, 240}) {  // 240: locals 240..271, those past 255 are skipped
    inputs.at("local_expert_offset").set(0, offset);
    EXPECT_TRUE(moe_local_experts_used(inputs).empty());
    OutputSet out = allocate_outputs(def, axes);
    for (std::int64_t i = 0; i < out.at("output").numel(); ++i) out.at("output").set(i, 5.0);
    moe_fp8_block_scale_reference(def, axes, inputs, out);
    expect_output(out, {0.0, 0.0});
  }
}

TEST_F(RefMoeCompute, MisshapenScaleIsAnError) {
  inputs.at("hidden_states_scale") = HostTensor(DType::kFloat32, {kTokens, 56});
  try {
    run_cpu_reference(def, axes, inputs);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden_states_scale"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kh
