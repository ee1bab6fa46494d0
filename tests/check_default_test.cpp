// The default element rule, the result fold, the tolerance table and policy selection: planted
// wrong outputs are rejected, legal variations accepted.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kh/check/check_result.h"
#include "kh/check/checker.h"
#include "kh/check/element_rule.h"
#include "kh/check/tolerance.h"
#include "kh/core/error.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor filled(DType dtype, Shape shape, double value) {
  HostTensor t(dtype, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, value);
  return t;
}

// 1.0 + i / 16 at flat index i: distinct, exactly representable in bf16 for small tensors.
HostTensor ramp(DType dtype, Shape shape) {
  HostTensor t(dtype, std::move(shape));
  for (std::int64_t i = 0; i < t.numel(); ++i) t.set(i, 1.0 + static_cast<double>(i) / 16);
  return t;
}

const CheckOptions kDefaults{};

CheckOptions official() {
  CheckOptions o;
  o.official = true;
  return o;
}

TEST(CheckElementRule, IdenticalTensorsPassWithZeroError) {
  const HostTensor ref = ramp(DType::kFloat32, {3, 4});
  const CheckResult r = check_tensor("out", ref.clone(), ref, kDefaults);
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.max_absolute_error, 0);
  EXPECT_EQ(r.max_relative_error, 0);
  EXPECT_EQ(r.matched_ratio, 1);
  EXPECT_TRUE(r.message.empty());
}

TEST(CheckElementRule, ElementOffByTwiceTheToleranceFailsAndIsNamed) {
  const HostTensor ref = filled(DType::kFloat32, {3, 4}, 1.0);
  HostTensor sol = ref.clone();
  sol.set(6, 1.0 + 2 * 1e-2);  // abs 0.02 > atol and rel 0.02 > rtol
  const CheckResult r = check_tensor("out", sol, ref, kDefaults);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_FALSE(r.terminal);  // tolerance failures let the other tensors run
  EXPECT_NEAR(r.max_absolute_error, 0.02, 1e-6);
  EXPECT_NEAR(r.max_relative_error, 0.02, 1e-6);
  EXPECT_DOUBLE_EQ(r.matched_ratio, 1.0 - 1.0 / 12);
  EXPECT_NE(r.message.find("'out'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("[1, 2]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("1.02"), std::string::npos) << r.message;
}

TEST(CheckElementRule, AbsoluteErrorBeyondAtolPassesWithinRtol) {
  // The rule fails an element only when BOTH bounds are exceeded.
  const HostTensor ref = filled(DType::kFloat32, {8}, 100.0);
  HostTensor sol = ref.clone();
  sol.set(3, 100.0 + 2 * 1e-2);  // abs 0.02 > atol, rel 2e-4 <= rtol
  EXPECT_TRUE(check_tensor("out", sol, ref, kDefaults).passed());
}

TEST(CheckElementRule, RelativeErrorBeyondRtolPassesWithinAtol) {
  const HostTensor ref = filled(DType::kFloat32, {8}, 1e-3);
  HostTensor sol = ref.clone();
  sol.set(5, 6e-3);  // rel 5 > rtol, abs 5e-3 <= atol
  const CheckResult r = check_tensor("out", sol, ref, kDefaults);
  EXPECT_TRUE(r.passed());
  EXPECT_GT(r.max_relative_error, 4.0);  // still reported
}

TEST(CheckElementRule, ComparesInFloat32LikeTheOfficialEvaluator) {
  // In fp32, 1 + 0.01 rounds such that |x - y| is a hair above or below 0.01f; what matters is
  // that the comparison uses the float32 atol, so exactly-representable boundary cases agree.
  const ElementComparison at_bound = compare_element(0.0f, 1e-2f, {1e-2, 1e-2, 1.0});
  EXPECT_FALSE(at_bound.fails);  // abs == atol (in float32) is not beyond it
  const ElementComparison beyond = compare_element(0.0f, 0.0101f, {1e-2, 1e-2, 1.0});
  EXPECT_TRUE(beyond.fails);
}

TEST(CheckElementRule, NaNInTheSolutionFails) {
  const HostTensor ref = ramp(DType::kFloat32, {2, 5});
  HostTensor sol = ref.clone();
  sol.set(7, kNaN);
  for (const CheckOptions& options : {kDefaults, official()}) {
    const CheckResult r = check_tensor("out", sol, ref, options);
    EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
    EXPECT_TRUE(r.terminal);
    EXPECT_TRUE(std::isnan(r.max_absolute_error));
    EXPECT_TRUE(std::isnan(r.max_relative_error));
    EXPECT_NE(r.message.find("NaN"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("[1, 2]"), std::string::npos) << r.message;
  }
}

TEST(CheckElementRule, NaNInABf16SolutionFails) {
  const HostTensor ref = ramp(DType::kBFloat16, {4});
  HostTensor sol = ref.clone();
  sol.set(0, kNaN);
  EXPECT_EQ(check_tensor("out", sol, ref, kDefaults).status, EvalStatus::kIncorrectNumerical);
}

TEST(CheckElementRule, InfinityWhereTheReferenceIsFiniteFailsInBothModes) {
  const HostTensor ref = ramp(DType::kFloat32, {6});
  HostTensor sol = ref.clone();
  sol.set(2, kInf);
  for (const CheckOptions& options : {kDefaults, official()}) {
    const CheckResult r = check_tensor("out", sol, ref, options);
    EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
    EXPECT_TRUE(r.terminal);
    EXPECT_EQ(r.max_absolute_error, kInf);
    EXPECT_EQ(r.max_relative_error, kInf);
    EXPECT_NE(r.message.find("[2]"), std::string::npos) << r.message;
  }
}

TEST(CheckElementRule, InfinityIsReportedBeforeNaNAsOfficially) {
  const HostTensor ref = ramp(DType::kFloat32, {6});
  HostTensor sol = ref.clone();
  sol.set(1, kNaN);
  sol.set(4, -kInf);
  const CheckResult r = check_tensor("out", sol, ref, kDefaults);
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_NE(r.message.find("[4]"), std::string::npos) << r.message;
}

TEST(CheckElementRule, SharedInfinityIsAcceptedByDefaultAndRejectedOfficially) {
  // The -inf lse of an all-padding row, reproduced exactly by the solution.
  HostTensor ref = ramp(DType::kFloat32, {2, 3});
  ref.set(4, -kInf);
  HostTensor sol = ref.clone();

  const CheckResult relaxed = check_tensor("lse", sol, ref, kDefaults);
  EXPECT_TRUE(relaxed.passed()) << relaxed.message;
  EXPECT_EQ(relaxed.max_absolute_error, 0);
  EXPECT_EQ(relaxed.matched_ratio, 1);

  const CheckResult strict = check_tensor("lse", sol, ref, official());
  EXPECT_EQ(strict.status, EvalStatus::kIncorrectNumerical);
  EXPECT_EQ(strict.max_absolute_error, kInf);
  EXPECT_NE(strict.message.find("[1, 1]"), std::string::npos) << strict.message;
  EXPECT_NE(strict.message.find("the official rule rejects any infinity in a solution"),
            std::string::npos)
      << strict.message;
  EXPECT_NE(strict.message.find("run without --official"), std::string::npos) << strict.message;
}

TEST(CheckElementRule, InfinityOfTheOtherSignIsNotShared) {
  HostTensor ref = ramp(DType::kFloat32, {3});
  ref.set(0, -kInf);
  HostTensor sol = ref.clone();
  sol.set(0, kInf);
  EXPECT_EQ(check_tensor("lse", sol, ref, kDefaults).status, EvalStatus::kIncorrectNumerical);
}

TEST(CheckElementRule, SharedInfinityDoesNotHideOtherErrors) {
  HostTensor ref = ramp(DType::kFloat32, {4});
  ref.set(0, -kInf);
  HostTensor sol = ref.clone();
  sol.set(3, 5.0);
  sol.set(2, kNaN);
  const CheckResult nan = check_tensor("lse", sol, ref, kDefaults);
  EXPECT_EQ(nan.status, EvalStatus::kIncorrectNumerical);
  EXPECT_TRUE(std::isnan(nan.max_absolute_error));
  sol.set(2, ref.get(2));
  const CheckResult off = check_tensor("lse", sol, ref, kDefaults);
  EXPECT_EQ(off.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(off.message.find("[3]"), std::string::npos) << off.message;
}

TEST(CheckElementRule, NonFiniteReferenceCountsAsMatchedAsOfficially) {
  HostTensor ref = ramp(DType::kFloat32, {4});
  ref.set(1, kNaN);
  ref.set(2, kInf);
  HostTensor sol = ramp(DType::kFloat32, {4});
  const CheckResult r = check_tensor("out", sol, ref, kDefaults);
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_EQ(r.max_absolute_error, kInf);  // |finite - inf|, reported as officially
  EXPECT_FALSE(std::isnan(r.max_relative_error));
}

TEST(CheckElementRule, ShapeMismatchIsIncorrectShape) {
  const HostTensor ref = ramp(DType::kFloat32, {2, 3});
  const CheckResult r = check_tensor("out", ramp(DType::kFloat32, {3, 2}), ref, kDefaults);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectShape);
  EXPECT_TRUE(r.terminal);
  EXPECT_NE(r.message.find("[3, 2]"), std::string::npos) << r.message;
}

TEST(CheckElementRule, ShapeIsCheckedBeforeDtype) {
  const HostTensor ref = ramp(DType::kFloat32, {2, 3});
  EXPECT_EQ(check_tensor("out", ramp(DType::kBFloat16, {6}), ref, kDefaults).status,
            EvalStatus::kIncorrectShape);
}

TEST(CheckElementRule, DtypeMismatchIsIncorrectDtype) {
  const HostTensor ref = ramp(DType::kFloat32, {2, 3});
  const CheckResult r = check_tensor("out", ramp(DType::kBFloat16, {2, 3}), ref, kDefaults);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectDtype);
  EXPECT_TRUE(r.terminal);
  EXPECT_NE(r.message.find("bfloat16"), std::string::npos) << r.message;
}

TEST(CheckElementRule, EmptyTensorPasses) {
  const HostTensor ref(DType::kFloat32, {0, 16});
  const CheckResult r = check_tensor("out", HostTensor(DType::kFloat32, {0, 16}), ref, kDefaults);
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.matched_ratio, 1);
}

TEST(CheckElementRule, IntegerOutputsGoThroughTheSameFormula) {
  const HostTensor ref = filled(DType::kInt32, {4}, 1000);
  HostTensor sol = ref.clone();
  sol.set(0, 1005);  // rel 5e-3: passes, as officially (no index-aware check by default)
  EXPECT_TRUE(check_tensor("idx", sol, ref, kDefaults).passed());
  sol.set(0, 1011);
  EXPECT_EQ(check_tensor("idx", sol, ref, kDefaults).status, EvalStatus::kIncorrectNumerical);
}

TEST(CheckElementRule, LargeTensorsAreCheckedAcrossBlocksToTheLastElement) {
  // 9999 elements: several internal blocks and a partial last one.
  const HostTensor ref = ramp(DType::kBFloat16, {3, 3333});
  HostTensor sol = ref.clone();
  sol.set(9998, ref.get(9998) * 1.5);
  const CheckResult off = check_tensor("out", sol, ref, kDefaults);
  EXPECT_EQ(off.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(off.message.find("[2, 3332]"), std::string::npos) << off.message;
  EXPECT_NE(off.message.find("1 of 9999"), std::string::npos) << off.message;
  EXPECT_GT(off.max_absolute_error, 0.9);

  sol = ref.clone();
  sol.set(5000, kNaN);
  EXPECT_TRUE(std::isnan(check_tensor("out", sol, ref, kDefaults).max_absolute_error));

  HostTensor ref_inf = ref.clone();
  ref_inf.set(7000, -kInf);
  sol = ref_inf.clone();
  EXPECT_TRUE(check_tensor("out", sol, ref_inf, kDefaults).passed());
  EXPECT_FALSE(check_tensor("out", sol, ref_inf, official()).passed());
}

TEST(CheckElementRule, MatchedRatioBelowTheRequiredOneFails) {
  const HostTensor ref = filled(DType::kFloat32, {10}, 1.0);
  HostTensor sol = ref.clone();
  sol.set(9, 2.0);
  CheckOptions loose;
  loose.tolerance.required_matched_ratio = 0.9;
  const CheckResult ok = check_tensor("out", sol, ref, loose);
  EXPECT_TRUE(ok.passed()) << ok.message;
  EXPECT_DOUBLE_EQ(ok.matched_ratio, 0.9);
  sol.set(8, 2.0);
  const CheckResult bad = check_tensor("out", sol, ref, loose);
  EXPECT_EQ(bad.status, EvalStatus::kIncorrectNumerical);
  EXPECT_DOUBLE_EQ(bad.matched_ratio, 0.8);
  EXPECT_NE(bad.message.find("[8]"), std::string::npos) << bad.message;  // the first failure
}

TEST(CheckResultFold, ToleranceFailuresAccumulateAndTerminalResultsOverride) {
  CheckResult numerical;
  numerical.status = EvalStatus::kIncorrectNumerical;
  numerical.max_absolute_error = 0.5;
  numerical.matched_ratio = 0.7;
  numerical.message = "first";
  CheckResult passed;
  passed.max_absolute_error = 0.9;
  passed.max_relative_error = kNaN;

  CheckResult total;
  accumulate(total, numerical);
  accumulate(total, passed);
  EXPECT_EQ(total.status, EvalStatus::kIncorrectNumerical);
  EXPECT_EQ(total.message, "first");
  EXPECT_EQ(total.max_absolute_error, 0.9);
  EXPECT_EQ(total.max_relative_error, 0);  // NaN dropped
  EXPECT_EQ(total.matched_ratio, 0.7);

  CheckResult shape;
  shape.status = EvalStatus::kIncorrectShape;
  shape.terminal = true;
  shape.matched_ratio = 0;
  shape.message = "shape";
  accumulate(total, shape);
  EXPECT_EQ(total.status, EvalStatus::kIncorrectShape);
  EXPECT_EQ(total.message, "shape");
  accumulate(total, numerical);  // nothing changes after a terminal result
  EXPECT_EQ(total.status, EvalStatus::kIncorrectShape);
}

TEST(CheckResultFold, IndexStringIsRowMajor) {
  EXPECT_EQ(index_string({2, 3, 4}, 23), "[1, 2, 3]");
  EXPECT_EQ(index_string({5}, 4), "[4]");
  EXPECT_EQ(index_string({}, 0), "[]");
}

// GDN decode uses the default policy: both outputs, in order.
struct GdnOutputs {
  OutputSet reference;
  OutputSet solution;
};

GdnOutputs gdn_decode_outputs() {
  GdnOutputs o;
  o.reference.add("output", ramp(DType::kBFloat16, {1, 1, 8, 128}));
  o.reference.add("new_state", ramp(DType::kFloat32, {1, 8, 128, 128}));
  o.solution = o.reference.clone();
  return o;
}

TEST(CheckDefaultPolicy, ChecksEveryOutputInOrder) {
  const Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  const CheckOptions options = official_options(def, false);
  GdnOutputs o = gdn_decode_outputs();
  EXPECT_TRUE(check_outputs(def, {}, o.reference, o.solution, options).passed());

  o.solution.at("new_state").set(5, 1e6);
  const CheckResult r = check_outputs(def, {}, o.reference, o.solution, options);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("'new_state' at [0, 0, 0, 5]"), std::string::npos) << r.message;
}

TEST(CheckDefaultPolicy, ALaterShapeErrorOverridesAToleranceFailure) {
  const Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  const GdnOutputs o = gdn_decode_outputs();
  OutputSet solution;
  solution.add("output", o.reference.at("output").clone());
  solution.at("output").set(0, 100.0);  // a tolerance failure in the first output
  solution.add("new_state", HostTensor(DType::kFloat32, {1, 8, 128, 127}));
  const CheckResult r = check_outputs(def, {}, o.reference, solution, official_options(def, false));
  EXPECT_EQ(r.status, EvalStatus::kIncorrectShape);
  EXPECT_NE(r.message.find("new_state"), std::string::npos) << r.message;
}

TEST(CheckDefaultPolicy, AMissingOutputIsARuntimeError) {
  const Definition def = test::shipped_definition("gdn_decode_qk4_v8_d128_k_last");
  GdnOutputs o = gdn_decode_outputs();
  OutputSet partial;
  partial.add("output", o.reference.at("output").clone());
  const CheckResult r = check_outputs(def, {}, o.reference, partial, official_options(def, false));
  EXPECT_EQ(r.status, EvalStatus::kRuntimeError);
  EXPECT_NE(r.message.find("new_state"), std::string::npos) << r.message;
}

TEST(CheckTolerance, OfficialTableAndPolicies) {
  struct Expected {
    const char* name;
    double atol, rtol, ratio;
    CheckPolicy policy;
  };
  const Expected expected[] = {
      {"gdn_decode_qk4_v8_d128_k_last", 1e-2, 1e-2, 1.0, CheckPolicy::kDefault},
      {"gdn_prefill_qk4_v8_d128_k_last", 1e-2, 1e-2, 1.0, CheckPolicy::kDefault},
      {"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64", 1e-2, 1e-2, 1.0,
       CheckPolicy::kSparseAttention},
      {"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", 1e-2, 1e-2, 1.0, CheckPolicy::kTopKSet},
      {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", 1.0, 0.3, 0.9,
       CheckPolicy::kLowBit},
  };
  for (const Expected& e : expected) {
    const Definition def = test::shipped_definition(e.name);
    const Tolerance t = official_tolerance(def);
    EXPECT_EQ(t.atol, e.atol) << e.name;
    EXPECT_EQ(t.rtol, e.rtol) << e.name;
    EXPECT_EQ(t.required_matched_ratio, e.ratio) << e.name;
    EXPECT_EQ(policy_for(def), e.policy) << e.name;
    const CheckOptions o = official_options(def, true);
    EXPECT_TRUE(o.official);
    EXPECT_EQ(o.tolerance.atol, e.atol);
  }
}

TEST(CheckTolerance, UnknownDefinitionsGetTheDefaults) {
  Definition def;
  def.name = "rmsnorm_h4096";
  const Tolerance t = official_tolerance(def);
  EXPECT_EQ(t.atol, 1e-2);
  EXPECT_EQ(t.rtol, 1e-2);
  EXPECT_EQ(t.required_matched_ratio, 1.0);
  EXPECT_EQ(policy_for(def), CheckPolicy::kDefault);
  def.name = "my_moe_fp8_block_scale_variant";
  EXPECT_EQ(official_tolerance(def).atol, 1.0);
  EXPECT_EQ(policy_for(def), CheckPolicy::kLowBit);
}

TEST(CheckTolerance, SamplingAndAmbiguousNamesAreRefused) {
  Definition def;
  def.name = "top_k_sampling";
  def.op_type = "sampling";
  EXPECT_THROW(policy_for(def), Error);
  def.op_type = "moe";
  def.name = "dsa_topk_indexer_moe_fp8_block_scale";
  EXPECT_THROW(policy_for(def), Error);
}

}  // namespace
}  // namespace kh
