// The DSA sparse attention policy: `output` and `lse`, both required, under the default element
// rule; the -inf lse of an all-padding row is kh's one deliberate difference from the official
// rule.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "kh/check/checker.h"
#include "test_support.h"

namespace kh {
namespace {

constexpr std::int64_t kTokens = 2;
constexpr double kInf = std::numeric_limits<double>::infinity();

class CheckSparseAttention : public ::testing::Test {
 protected:
  CheckSparseAttention() {
    HostTensor output(DType::kBFloat16, {kTokens, 16, 512});
    HostTensor lse(DType::kFloat32, {kTokens, 16});
    // Token 0 attends to some tokens; token 1's indices are all padding: output 0, lse -inf.
    for (std::int64_t i = 0; i < 16 * 512; ++i)
      output.set(i, std::sin(static_cast<double>(i)) * 0.5);
    for (std::int64_t h = 0; h < 16; ++h) {
      lse.set(h, 3.0 + 0.125 * static_cast<double>(h));
      lse.set(16 + h, -kInf);
    }
    reference_.add("output", std::move(output));
    reference_.add("lse", std::move(lse));
  }

  CheckResult check(const OutputSet& solution, bool official = false) const {
    return check_outputs(def_, {}, reference_, solution, official_options(def_, official));
  }

  Definition def_ = test::shipped_definition("dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64");
  OutputSet reference_;
};

TEST_F(CheckSparseAttention, AllPaddingRowWithSharedMinusInfinityLseIsAcceptedByDefault) {
  ASSERT_EQ(policy_for(def_), CheckPolicy::kSparseAttention);
  const CheckResult r = check(reference_.clone());
  EXPECT_TRUE(r.passed()) << r.message;
  EXPECT_EQ(r.max_absolute_error, 0);
}

TEST_F(CheckSparseAttention, SharedMinusInfinityLseIsRejectedWithOfficial) {
  const CheckResult r = check(reference_.clone(), /*official=*/true);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_EQ(r.max_absolute_error, kInf);
  EXPECT_NE(r.message.find("'lse' at [1, 0]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the official rule rejects any infinity in a solution; kh accepts it "
                           "by default because the reference has the same infinity here"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("run without --official"), std::string::npos) << r.message;
}

TEST_F(CheckSparseAttention, AFiniteLseWhereTheReferenceIsMinusInfinityIsMatchedAsOfficially) {
  // Officially a reference infinity never fails an element (rel = inf/inf is NaN); kh keeps that.
  OutputSet sol = reference_.clone();
  sol.at("lse").set(16 + 3, -1e30);
  EXPECT_TRUE(check(sol).passed());
}

TEST_F(CheckSparseAttention, MinusInfinityLseWhereTheReferenceIsFiniteFails) {
  OutputSet sol = reference_.clone();
  sol.at("lse").set(5, -kInf);
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("'lse' at [0, 5]"), std::string::npos) << r.message;
}

TEST_F(CheckSparseAttention, PlusInfinityLseFails) {
  OutputSet sol = reference_.clone();
  sol.at("lse").set(16, kInf);  // the reference has -inf here
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectNumerical);
}

TEST_F(CheckSparseAttention, AWrongLseElementFailsAndIsNamed) {
  OutputSet sol = reference_.clone();
  sol.at("lse").set(3, reference_.at("lse").get(3) + 0.1);  // abs 0.1, rel ~3%
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("'lse' at [0, 3]"), std::string::npos) << r.message;
}

TEST_F(CheckSparseAttention, AWrongOutputElementFailsAndIsNamed) {
  OutputSet sol = reference_.clone();
  sol.at("output").set(512 + 7, 2.0);  // token 0, head 1, dim 7
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_NE(r.message.find("'output' at [0, 1, 7]"), std::string::npos) << r.message;
}

TEST_F(CheckSparseAttention, ANaNInTheOutputOfThePaddingRowFails) {
  // e.g. 0/0 from normalising an empty softmax.
  OutputSet sol = reference_.clone();
  sol.at("output").set(16 * 512 + 9, std::numeric_limits<double>::quiet_NaN());
  const CheckResult r = check(sol);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectNumerical);
  EXPECT_TRUE(std::isnan(r.max_absolute_error));
}

TEST_F(CheckSparseAttention, BothOutputsMustBeWritten) {
  OutputSet output_only;
  output_only.add("output", reference_.at("output").clone());
  const CheckResult r = check(output_only);
  EXPECT_EQ(r.status, EvalStatus::kIncorrectShape);
  EXPECT_NE(r.message.find("'lse'"), std::string::npos) << r.message;
}

TEST_F(CheckSparseAttention, ShapeAndDtypeMismatchesAreReported) {
  OutputSet sol = reference_.clone();
  sol.at("lse") = HostTensor(DType::kFloat32, {kTokens, 8});
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectShape);
  sol = reference_.clone();
  sol.at("output") = HostTensor(DType::kFloat32, {kTokens, 16, 512});
  EXPECT_EQ(check(sol).status, EvalStatus::kIncorrectDtype);
}

}  // namespace
}  // namespace kh
