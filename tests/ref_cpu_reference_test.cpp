// The CPU reference registry: every shipped definition has a native reference, keyed by its exact
// name, and outputs are allocated from the definition.
#include <string>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/ref/cpu_reference.h"
#include "test_support.h"

namespace kh {
namespace {

const char* const kShipped[] = {
    "gdn_decode_qk4_v8_d128_k_last",
    "gdn_prefill_qk4_v8_d128_k_last",
    "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
    "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64",
    "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
};

TEST(RefCpuReference, EveryShippedDefinitionHasOneByExactName) {
  for (const char* name : kShipped) {
    EXPECT_NE(find_cpu_reference(name), nullptr) << name;
    EXPECT_EQ(find_cpu_reference(std::string(name) + "_x"), nullptr) << name;
  }
  EXPECT_EQ(find_cpu_reference("gdn_decode"), nullptr);
  EXPECT_EQ(find_cpu_reference(""), nullptr);
  EXPECT_EQ(find_cpu_reference(kShipped[0]), &gdn_decode_reference);
  EXPECT_EQ(find_cpu_reference(kShipped[4]), &moe_fp8_block_scale_reference);
}

TEST(RefCpuReference, AllocateOutputsFollowsTheDefinition) {
  const Definition def = test::shipped_definition(kShipped[2]);
  AxisValues axes{{"num_tokens", 3}, {"num_pages", 5}};
  for (const auto& axis : def.axes)
    if (axis.is_const) axes[axis.name] = axis.value;
  const OutputSet outputs = allocate_outputs(def, axes);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].name, "output");
  EXPECT_EQ(outputs[0].tensor.dtype(), DType::kBFloat16);
  EXPECT_EQ(outputs[0].tensor.shape(), (Shape{3, 16, 512}));
  EXPECT_EQ(outputs[1].name, "lse");
  EXPECT_EQ(outputs[1].tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(outputs[1].tensor.shape(), (Shape{3, 16}));
  for (std::int64_t i = 0; i < outputs[1].tensor.numel(); ++i)
    EXPECT_EQ(outputs[1].tensor.get(i), 0.0);
}

TEST(RefCpuReference, RunningAnUnknownDefinitionNamesIt) {
  Definition def = test::shipped_definition(kShipped[0]);
  def.name = "my_custom_op";
  try {
    run_cpu_reference(def, {}, InputSet{});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("my_custom_op"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kh
