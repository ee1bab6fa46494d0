// The low-bit (MoE FP8 block-scale) policy: the loose official MoE tolerance (atol 1, rtol 0.3)
// where up to 10% of the elements may miss it.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "test_support.h"

namespace kh {
namespace {

class CheckLowBit : public ::testing::Test {
 protected:
  CheckLowBit() {
    // 20 elements, the size of the official evaluator's own LowBit test.
    HostTensor ref(DType::kBFloat16, {1, 20});
    for (std::int64_t i = 0; i < ref.numel(); ++i) ref.set(i, 1.0 + static_cast<double>(i));
    reference_.add("output", std::move(ref));
  }

  OutputSet with_wrong_elements(int count) const {
    OutputSet sol = reference_.clone();
    // Beyond both bounds: abs > 1 and rel > 0.3.
    for (int i = 0; i < count; ++i) sol.at("output").set(3 * i, 100.0);
    return sol;
  }

  CheckResult check(const OutputSet& solution, bool official = false) const {
    return check_outputs(def_, {}, reference_, solution, official_options(def_, official));
  }

  Definition def_ =
      test::shipped_definition("moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048");
  OutputSet reference_;
};

TEST_F(CheckLowBit, UsesTheOfficialMoeTolerance) {
  EXPECT_EQ(policy_for(def_), CheckPolicy::kLowBit);
  const CheckOptions options = official_options(def_, false);
  EXPECT_EQ(options.tolerance.atol, 1.0);
  EXPECT_EQ(options.tolerance.rtol, 0.3);
  EXPECT_EQ(options.tolerance.required_matched_ratio, 0.9);
}

TEST_F(CheckLowBit, OneWrongElementInTwentyPasses) {
  const CheckResult r = check(with_wrong_elements(1));
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_DOUBLE_EQ(r.matched_ratio, 0.95);  // recorded even when passing
  EXPECT_GT(r.max_absolute_error, 1.0);
}

TEST_F(CheckLowBit, TwoWrongElementsInTwentySitExactlyOnTheRequiredRatio) {
  const CheckResult r = check(with_wrong_elements(2));
  EXPECT_TRUE(r.passed()) << r.message;  // 0.9 is not below 0.9
  EXPECT_DOUBLE_EQ(r.matched_ratio, 0.9);
}

TEST_F(CheckLowBit, ThreeWrongElementsInTwentyFail) {
  const CheckResult r = check(with_wrong_elements(3));
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_DOUBLE_EQ(r.matched_ratio, 0.85);
  EXPECT_NE(r.message.find("'output' at [0, 0]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("3 of 20"), std::string::npos) << r.message;
}

TEST_F(CheckLowBit, LargeAbsoluteErrorsWithinRtolPass) {
  OutputSet sol = reference_.clone();
  for (std::int64_t i = 0; i < 20; ++i)
    sol.at("output").set(i, reference_.at("output").get(i) * 1.25);  // rel 0.25 <= 0.3
  const CheckResult r = check(sol);
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_EQ(r.matched_ratio, 1);
}

TEST_F(CheckLowBit, ANonFiniteElementFailsWhateverTheRatio) {
  OutputSet sol = reference_.clone();
  sol.at("output").set(7, std::numeric_limits<double>::quiet_NaN());
  const CheckResult nan = check(sol);
  EXPECT_EQ(nan.status, EvalStatus::kIncorrectNumerical);
  EXPECT_TRUE(std::isnan(nan.max_absolute_error));

  sol.at("output").set(7, std::numeric_limits<double>::infinity());
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);
}

TEST_F(CheckLowBit, ShapeAndDtypeMismatchesAreReported) {
  OutputSet shape;
  shape.add("output", HostTensor(DType::kBFloat16, {2, 10}));
  EXPECT_EQ(check(shape).status, EvalStatus::kIncorrectShape);
  OutputSet dtype;
  dtype.add("output", HostTensor(DType::kFloat32, {1, 20}));
  EXPECT_EQ(check(dtype).status, EvalStatus::kIncorrectDtype);
}

}  // namespace
}  // namespace kh
