// libkhk's DSA sparse attention used the way a serving engine uses it (label `gpu`; skipped
// without a device): the entry and its workspace query are looked up with dlopen and called on
// kh's device buffers, on a stream of this process's CUDA runtime, and judged by kh's GPU
// reference:
//   - captured once into a CUDA graph (with the workspace it asked for), then replayed on inputs
//     of other generator seeds written to the same addresses, so the indices change under the
//     graph: every replay must match the reference for its own indices;
//   - called without a workspace: it must split less and stay right.
#include <gtest/gtest.h>

#include "libkhk_test_support.h"

namespace kh {
namespace {

constexpr const char* kAttention = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
// Token counts from tests/data/extra_shapes: 3 (scattered rows over a 64-page cache: many splits
// per token, merged) and 64 (page spans: few splits).
constexpr std::int64_t kTokens[] = {3, 64};

class LibkhkAttention : public ::testing::TestWithParam<std::int64_t>,
                       protected test::LibkhkWorkspaceEntry {
 protected:
  void SetUp() override {
    KH_REQUIRE_GPU();
    ASSERT_NO_FATAL_FAILURE(open(kAttention));
    workload_ = test::extra_shape_workload(*def_, "num_tokens", GetParam());
  }
  void TearDown() override { close(); }
};

TEST_P(LibkhkAttention, GraphCapturedOnceIsRightForNewIndices) {
  expect_graph_replays_match_with_workspace("sparse_indices");
  if (GetParam() <= 8) {
    EXPECT_GT(asked_bytes_, 0u) << "a few tokens should be split over many CTAs";
  }
}

TEST_P(LibkhkAttention, WithoutWorkspaceIsRight) { expect_right_without_workspace(); }

INSTANTIATE_TEST_SUITE_P(Tokens, LibkhkAttention, ::testing::ValuesIn(kTokens),
                         [](const auto& info) { return "tokens_" + std::to_string(info.param); });

}  // namespace
}  // namespace kh
