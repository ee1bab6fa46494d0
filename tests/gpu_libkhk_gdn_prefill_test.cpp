// libkhk's GDN prefill used the way a serving engine uses it (label `gpu`; skipped without a
// device), on the shapes its context-parallel route takes and on many sequences: the entry and
// its workspace query are looked up with dlopen and called on kh's device buffers, on a stream of
// this process's CUDA runtime, and judged by kh's GPU reference:
//   - captured once into a CUDA graph (with the workspace it asked for: the groups' maps, partials
//     and ready counters), then replayed on inputs of other generator seeds written to the same
//     addresses: every replay must match the reference for its own inputs. The route's scan runs
//     in thread-block clusters and its correction is a programmatic dependent launch that waits
//     on counters the map pass zeroes, so a replay that skipped the zeroing or lost the launch
//     order would read another call's entry states;
//   - called without a workspace: it must take a route that needs none and stay right.
#include <gtest/gtest.h>

#include "libkhk_test_support.h"

namespace kh {
namespace {

constexpr const char* kPrefill = "gdn_prefill_qk4_v8_d128_k_last";
// Shapes from tests/data/extra_shapes: one sequence of 20000 tokens (8 groups) and two that
// share 16000 (4 groups).
struct Shape {
  std::int64_t tokens, sequences;
};
constexpr Shape kShapes[] = {{20000, 1}, {16000, 2}};

class LibkhkPrefill : public ::testing::TestWithParam<Shape>,
                      protected test::LibkhkWorkspaceEntry {
 protected:
  void SetUp() override {
    KH_REQUIRE_GPU();
    ASSERT_NO_FATAL_FAILURE(open(kPrefill));
    workload_ = test::extra_shape_workload(
        *def_, {{"total_seq_len", GetParam().tokens}, {"num_seqs", GetParam().sequences}});
  }
  void TearDown() override { close(); }
};

TEST_P(LibkhkPrefill, GraphCapturedOnceIsRightForNewInputs) {
  expect_graph_replays_match_with_workspace("k");
  EXPECT_GT(asked_bytes_, 0u) << "a few long sequences should take the context-parallel route";
}

TEST_P(LibkhkPrefill, WithoutWorkspaceIsRight) { expect_right_without_workspace(); }

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return "tokens_" + std::to_string(info.param.tokens) + "_seqs_" +
         std::to_string(info.param.sequences);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LibkhkPrefill, ::testing::ValuesIn(kShapes), shape_name);

// Shapes from tests/data/extra_shapes on the small-chunk route's wide CTAs, more of them than the
// SMs: 8192 x 64 and 20000 x 60 take the sequences longest first (each CTA ranks the lengths it
// reads from cu_seqlens on the device), 1000 x 200 has more sequences than the ranking takes and
// keeps index order. Each replay draws other lengths, so a ranking kept from the captured call
// (on the host, or cached) would walk the wrong sequences.
constexpr Shape kManySequenceShapes[] = {{8192, 64}, {20000, 60}, {1000, 200}};

class LibkhkPrefillManySequences : public LibkhkPrefill {};

TEST_P(LibkhkPrefillManySequences, GraphCapturedOnceIsRightForNewLengths) {
  expect_graph_replays_match_with_workspace("cu_seqlens");
}

INSTANTIATE_TEST_SUITE_P(Shapes, LibkhkPrefillManySequences,
                         ::testing::ValuesIn(kManySequenceShapes), shape_name);

}  // namespace
}  // namespace kh
