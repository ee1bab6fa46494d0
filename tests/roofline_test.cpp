// The roofline models against hand-computed calls on small axes: each byte and FLOP count below
// is worked out in the comment above it from the definition's shapes and dtypes, independently of
// the model's code. The inputs are built so that the input-dependent parts matter: duplicate and
// -1 sparse indices, a block table reached only in part and shared between rows, a routing that
// activates a known set of local experts, a GDN state given or absent. Also: the floor is the
// larger of its two terms on the right ceiling, and the ceilings' JSON round-trips and names a
// missing field.
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/ref/moe_routing.h"
#include "kh/roofline/call_cost.h"
#include "kh/roofline/ceilings.h"
#include "test_support.h"

namespace kh {
namespace {

using test::axes_with;
using test::shipped_definition;
using test::zero_inputs;

const char* const kAttention = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
const char* const kIndexer = "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64";
const char* const kGdnDecode = "gdn_decode_qk4_v8_d128_k_last";
const char* const kGdnPrefill = "gdn_prefill_qk4_v8_d128_k_last";
const char* const kMoe = "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048";

using test::error_of;

void make_absent(InputSet& inputs, const std::string& name) {
  for (auto& item : inputs)
    if (item.name == name) {
      item.present = false;
      item.tensor = HostTensor();
    }
}

// ---- DSA sparse attention ------------------------------------------------------------------

struct AttentionCall {
  Definition def = shipped_definition(kAttention);
  AxisValues axes = axes_with(def, {{"num_tokens", 2}, {"num_pages", 3}});  // cache rows 0..191
  InputSet inputs = zero_inputs(def, axes);

  // Every index -1, then the given ones at the given positions of each token's row.
  void set_indices(const std::vector<std::vector<std::pair<int, int>>>& per_token) {
    HostTensor& indices = inputs.at("sparse_indices");
    for (std::int64_t i = 0; i < indices.numel(); ++i) indices.set(i, -1);
    for (std::size_t t = 0; t < per_token.size(); ++t)
      for (auto [j, row] : per_token[t]) indices.set(static_cast<std::int64_t>(t) * 2048 + j, row);
  }
};

TEST(RooflineAttention, ReadsEachDistinctValidRowOnceAndCountsDistinctRowsPerToken) {
  AttentionCall call;
  // Token 0: 5, 5 (a duplicate), 70, -1, 130. Token 1: -1 first (padding anywhere), 70 (shared with
  // token 0), 7. Per-token distinct rows: {5, 70, 130} = 3 and {70, 7} = 2; union U = {5, 7, 70,
  // 130} = 4 rows.
  call.set_indices({{{0, 5}, {1, 5}, {2, 70}, {3, -1}, {4, 130}}, {{0, -1}, {1, 70}, {2, 7}}});
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // Bytes: rows 4 x (512 + 64) x 2 = 4608; q_nope 2 x 16 x 512 x 2 = 32,768; q_pe 2 x 16 x 64 x 2
  // = 4096; sparse_indices 2 x 2048 x 4 = 16,384; output 2 x 16 x 512 x 2 = 32,768; lse 2 x 16 x 4
  // = 128. Sum 90,752.
  EXPECT_DOUBLE_EQ(cost.bytes, 90752.0);
  // FLOPs: (3 + 2) token-rows x 16 heads x 2 x (576 + 512) = 5 x 16 x 2176 = 174,080.
  EXPECT_DOUBLE_EQ(cost.flops, 174080.0);
  EXPECT_EQ(cost.kind, FlopKind::kBf16);
  EXPECT_NE(cost.note.find("4 distinct cache rows"), std::string::npos) << cost.note;
}

TEST(RooflineAttention, AllPaddingCostsOnlyTheDenseTensors) {
  AttentionCall call;
  call.set_indices({});
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // 90,752 - 4608 (no rows) = 86,144; no FLOPs.
  EXPECT_DOUBLE_EQ(cost.bytes, 86144.0);
  EXPECT_DOUBLE_EQ(cost.flops, 0.0);
}

TEST(RooflineAttention, AnIndexOutsideTheCacheIsAnError) {
  AttentionCall call;
  call.set_indices({{}, {{3, 192}}});  // 3 pages x 64 = 192 rows: 192 is one past the end
  EXPECT_NE(error_of([&] {
              minimal_call_cost(call.def, call.axes, call.inputs);
            }).find("sparse_indices[1, 3] = 192"),
            std::string::npos);
  call.set_indices({{{0, -2}}});
  EXPECT_NE(error_of([&] {
              minimal_call_cost(call.def, call.axes, call.inputs);
            }).find("sparse_indices[0, 0] = -2"),
            std::string::npos);
}

// ---- DSA top-k indexer ---------------------------------------------------------------------

struct IndexerCall {
  Definition def = shipped_definition(kIndexer);
  AxisValues axes = axes_with(def, {{"batch_size", 3}, {"max_num_pages", 3}, {"num_pages", 5}});
  InputSet inputs = zero_inputs(def, axes);

  // Block-table entries that no seq_len reaches are 99, not a page: reading them would fail.
  void set(const std::vector<int>& seq_lens, const std::vector<std::vector<int>>& table) {
    for (std::size_t b = 0; b < seq_lens.size(); ++b) {
      inputs.at("seq_lens").set(static_cast<std::int64_t>(b), seq_lens[b]);
      for (std::size_t i = 0; i < 3; ++i)
        inputs.at("block_table").set(static_cast<std::int64_t>(b * 3 + i), table[b][i]);
    }
  }
};

TEST(RooflineIndexer, ReadsOnlyPagesReachedWithinSeqLenAndSharedPagesOnce) {
  IndexerCall call;
  // Row 0: 70 tokens -> ceil(70/64) = 2 pages, table [2, 4, 99]: pages {2, 4}.
  // Row 1: 64 tokens -> 1 page, table [4, 99, 99]: page {4}, shared with row 0.
  // Row 2: 0 tokens: nothing read (not even q and weights), table entries unreached.
  call.set({70, 64, 0}, {{2, 4, 99}, {4, 99, 99}, {99, 99, 99}});
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // Bytes: distinct pages {2, 4}: 2 x 64 x 132 = 16,896; q 2 rows x 64 x 128 x 1 = 16,384;
  // weights 2 x 64 x 4 = 512; block-table entries (2 + 1) x 4 = 12; seq_lens 3 x 4 = 12;
  // topk_indices 3 x 2048 x 4 = 24,576. Sum 58,392.
  EXPECT_DOUBLE_EQ(cost.bytes, 58392.0);
  // FLOPs: (70 + 64) tokens x 2 x 64 x 128 = 134 x 16,384 = 2,195,456.
  EXPECT_DOUBLE_EQ(cost.flops, 2195456.0);
  EXPECT_EQ(cost.kind, FlopKind::kFp8);
}

TEST(RooflineIndexer, DisjointPagesAreEachRead) {
  IndexerCall call;
  // Row 0: 128 tokens, pages {0, 1}; row 1: 1 token, page {3}; row 2: 129 tokens, pages {0, 1, 2}
  // -> distinct {0, 1, 2, 3}.
  call.set({128, 1, 129}, {{0, 1, 99}, {3, 99, 99}, {0, 1, 2}});
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // Bytes: 4 x 8448 = 33,792; q + weights 3 x (8192 + 256) = 25,344; table (2 + 1 + 3) x 4 = 24;
  // seq_lens 12; topk_indices 24,576. Sum 83,748.
  EXPECT_DOUBLE_EQ(cost.bytes, 83748.0);
  // FLOPs: (128 + 1 + 129) x 16,384 = 258 x 16,384 = 4,227,072.
  EXPECT_DOUBLE_EQ(cost.flops, 4227072.0);
}

TEST(RooflineIndexer, AReachedBadPageOrAnOverlongSeqLenIsAnError) {
  IndexerCall call;
  call.set({70, 65, 0}, {{2, 4, 99}, {4, 99, 99}, {99, 99, 99}});  // 65 tokens reach entry 1
  EXPECT_NE(error_of([&] {
              minimal_call_cost(call.def, call.axes, call.inputs);
            }).find("block_table[1, 1] = 99"),
            std::string::npos);
  call.set({193, 0, 0}, {{0, 1, 2}, {0, 0, 0}, {0, 0, 0}});  // 3 pages hold 192 tokens
  EXPECT_NE(error_of([&] {
              minimal_call_cost(call.def, call.axes, call.inputs);
            }).find("seq_lens[0] = 193"),
            std::string::npos);
}

// ---- MoE ------------------------------------------------------------------------------------

// Three tokens; every logit -10 except eight at 1.0 per token. Each token's eight planted experts
// lie in at most four groups, and every other group scores 2 sigmoid(-10), so the kept groups
// contain the eight and they are the top 8 (see RefMoeRouting in ref_moe_test.cpp).
struct MoeCall {
  Definition def = shipped_definition(kMoe);
  AxisValues axes = axes_with(def, {{"seq_len", 3}});
  InputSet inputs = zero_inputs(def, axes);

  explicit MoeCall(int local_expert_offset) {
    const std::vector<std::vector<int>> planted = {{0, 1, 2, 35, 39, 64, 65, 66},  // groups 0, 1, 2
                                                   {0, 1, 2, 39, 60, 64, 65, 66},  // groups 0, 1, 2
                                                   {0, 1, 2, 3, 64, 65, 66, 67}};  // groups 0, 2
    HostTensor& logits = inputs.at("routing_logits");
    for (int t = 0; t < 3; ++t) {
      for (int e = 0; e < 256; ++e) logits.set(t * 256 + e, -10.0);
      for (int e : planted[t]) logits.set(t * 256 + e, 1.0);
    }
    inputs.at("local_expert_offset").set(0, local_expert_offset);
  }
};

TEST(RooflineMoe, ReadsTheWeightsOfActiveLocalExpertsOnly) {
  MoeCall call(32);  // local experts = global 32..63 (group 1)
  // Local experts routed to: token 0 -> 35, 39 (local 3, 7); token 1 -> 39, 60 (local 7, 28);
  // token 2 -> none. Active {3, 7, 28}; 4 routed pairs; 2 routed tokens.
  EXPECT_EQ(moe_local_experts_used(call.inputs), (std::vector<int>{3, 7, 28}));
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // Bytes per active expert: W13 4096 x 7168 = 29,360,128; its scales 32 x 56 x 4 = 7168;
  // W2 7168 x 2048 = 14,680,064; its scales 56 x 16 x 4 = 3584: 44,050,944; x 3 = 132,152,832.
  // Per routed token: 7168 + 56 x 4 = 7392; x 2 = 14,784. routing_logits 3 x 256 x 4 = 3072;
  // routing_bias 256 x 2 = 512; output 3 x 7168 x 2 = 43,008. Sum 132,214,208.
  EXPECT_DOUBLE_EQ(cost.bytes, 132214208.0);
  // FLOPs: 4 pairs x 2 x (4096 x 7168 + 7168 x 2048) = 8 x 44,040,192 = 352,321,536.
  EXPECT_DOUBLE_EQ(cost.flops, 352321536.0);
  EXPECT_EQ(cost.kind, FlopKind::kFp8);
}

TEST(RooflineMoe, TheOffsetDecidesWhichExpertsAreLocal) {
  MoeCall call(0);  // local experts = global 0..31 (group 0)
  // Token 0 -> 0, 1, 2; token 1 -> 0, 1, 2; token 2 -> 0, 1, 2, 3. Active {0, 1, 2, 3}; 10 pairs;
  // 3 routed tokens.
  EXPECT_EQ(moe_local_experts_used(call.inputs), (std::vector<int>{0, 1, 2, 3}));
  const CallCost cost = minimal_call_cost(call.def, call.axes, call.inputs);
  // 4 x 44,050,944 = 176,203,776; 3 x 7392 = 22,176; 3072 + 512 + 43,008. Sum 176,272,544.
  EXPECT_DOUBLE_EQ(cost.bytes, 176272544.0);
  // 10 x 88,080,384 = 880,803,840.
  EXPECT_DOUBLE_EQ(cost.flops, 880803840.0);
}

// ---- GDN ------------------------------------------------------------------------------------

TEST(RooflineGdn, DecodeReadsTheStateOnlyWhenGiven) {
  const Definition def = shipped_definition(kGdnDecode);
  const AxisValues axes = axes_with(def, {{"batch_size", 2}});
  InputSet inputs = zero_inputs(def, axes);
  // q, k 2 x 4 x 128 x 2 = 2048 each; v 2 x 8 x 128 x 2 = 4096; a, b 2 x 8 x 2 = 32 each;
  // A_log, dt_bias 8 x 4 = 32 each; output 2 x 8 x 128 x 2 = 4096; new_state 2 x 8 x 128 x 128 x 4
  // = 1,048,576 written; state the same when read.
  // With state: 2048 + 2048 + 4096 + 32 + 32 + 32 + 32 + 4096 + 2 x 1,048,576 = 2,109,568
  // (= 2 x 1,054,752 + 64).
  const CallCost with_state = minimal_call_cost(def, axes, inputs);
  EXPECT_DOUBLE_EQ(with_state.bytes, 2109568.0);
  // FLOPs: 2 tokens x 8 heads x (7 x 128^2 + 3 x 128) = 16 x 115,072 = 1,841,152.
  EXPECT_DOUBLE_EQ(with_state.flops, 1841152.0);
  EXPECT_EQ(with_state.kind, FlopKind::kFp32);

  make_absent(inputs, "state");
  const CallCost without_state = minimal_call_cost(def, axes, inputs);
  // 2,109,568 - 1,048,576 = 1,060,992; the arithmetic is unchanged.
  EXPECT_DOUBLE_EQ(without_state.bytes, 1060992.0);
  EXPECT_DOUBLE_EQ(without_state.flops, 1841152.0);
}

TEST(RooflineGdn, PrefillReadsStatesOfNonEmptySequencesAndWritesAll) {
  const Definition def = shipped_definition(kGdnPrefill);
  const AxisValues axes =
      axes_with(def, {{"total_seq_len", 5}, {"num_seqs", 3}, {"len_cu_seqlens", 4}});
  InputSet inputs = zero_inputs(def, axes);
  const std::int64_t cu[] = {0, 3, 3, 5};  // lengths 3, 0, 2
  for (int i = 0; i < 4; ++i) inputs.at("cu_seqlens").set(i, static_cast<double>(cu[i]));
  // Per token: q, k 4 x 128 x 2 = 1024 each, v 8 x 128 x 2 = 2048, a, b 8 x 2 = 16 each: 4128;
  // x 5 = 20,640. Output 5 x 8 x 128 x 2 = 10,240. State per sequence 8 x 128 x 128 x 4 = 524,288:
  // read for the 2 non-empty sequences (1,048,576), written for all 3 (1,572,864). cu_seqlens
  // 4 x 8 = 32; A_log, dt_bias 32 each. With state: 20,640 + 10,240 + 1,048,576 + 1,572,864 + 32
  // + 64 = 2,652,416.
  const CallCost with_state = minimal_call_cost(def, axes, inputs);
  EXPECT_DOUBLE_EQ(with_state.bytes, 2652416.0);
  // FLOPs: 5 tokens x 8 heads x 115,072 = 4,602,880, counted at the bf16 rate.
  EXPECT_DOUBLE_EQ(with_state.flops, 4602880.0);
  EXPECT_EQ(with_state.kind, FlopKind::kBf16);

  make_absent(inputs, "state");
  const CallCost without_state = minimal_call_cost(def, axes, inputs);
  EXPECT_DOUBLE_EQ(without_state.bytes, 2652416.0 - 1048576.0);
  EXPECT_DOUBLE_EQ(without_state.flops, 4602880.0);

  inputs.at("cu_seqlens").set(2, 2.0);  // 0, 3, 2, 5: decreasing
  EXPECT_NE(error_of([&] { minimal_call_cost(def, axes, inputs); }).find("cu_seqlens[1..2]"),
            std::string::npos);
}

TEST(RooflineDispatch, ADefinitionWithoutAModelIsNamed) {
  Definition def = shipped_definition(kGdnDecode);
  def.name = "gdn_decode_renamed";
  const AxisValues axes = axes_with(def, {{"batch_size", 1}});
  const InputSet inputs = zero_inputs(def, axes);
  EXPECT_NE(error_of([&] { minimal_call_cost(def, axes, inputs); }).find("'gdn_decode_renamed'"),
            std::string::npos);
}

// ---- floor ----------------------------------------------------------------------------------

MachineCeilings sample_ceilings() {
  MachineCeilings c;
  c.gpu = "NVIDIA H200";
  c.copy_bytes_per_second = 2e12;
  c.bf16_flops_per_second = 1e15;
  c.fp8_flops_per_second = 2e15;
  c.fp32_flops_per_second = 5e13;
  c.empty_kernel_seconds = 2.5e-6;
  c.gather_latency_seconds = 6.0e-7;
  return c;
}

TEST(RooflineFloor, IsTheLargerOfTheCopyTermAndTheComputeTermOfItsKind) {
  const MachineCeilings c = sample_ceilings();
  // Copy 4e6 / 2e12 = 2e-6 s beats bf16 1e9 / 1e15 = 1e-6 s.
  EXPECT_DOUBLE_EQ(floor_seconds({4e6, 1e9, FlopKind::kBf16, ""}, c), 2e-6);
  // 1e10 FLOP: bf16 1e-5 s, fp8 5e-6 s, fp32 2e-4 s, each above the copy term.
  EXPECT_DOUBLE_EQ(floor_seconds({4e6, 1e10, FlopKind::kBf16, ""}, c), 1e-5);
  EXPECT_DOUBLE_EQ(floor_seconds({4e6, 1e10, FlopKind::kFp8, ""}, c), 5e-6);
  EXPECT_DOUBLE_EQ(floor_seconds({4e6, 1e10, FlopKind::kFp32, ""}, c), 2e-4);
  // Latencies are not part of the roofline floor.
  EXPECT_DOUBLE_EQ(floor_seconds({0, 0, FlopKind::kFp32, ""}, c), 0.0);

  MachineCeilings broken = c;
  broken.fp8_flops_per_second = 0;
  EXPECT_NE(error_of([&] {
              floor_seconds({1, 1, FlopKind::kFp8, ""}, broken);
            }).find("fp8_flops_per_second"),
            std::string::npos);
}

TEST(RooflineFloor, FractionIsFloorOverMeasured) {
  EXPECT_DOUBLE_EQ(fraction_of_floor(4e-6, 2e-6), 0.5);
  EXPECT_DOUBLE_EQ(fraction_of_floor(2e-6, 2e-6), 1.0);
  EXPECT_THROW(fraction_of_floor(0.0, 2e-6), Error);
  EXPECT_THROW(fraction_of_floor(-1e-6, 2e-6), Error);
}

TEST(RooflineFloor, EndToEndOnAModelledCall) {
  // The GDN decode call above with state: 2,109,568 B / 2e12 = 1.054784e-6 s; 1,841,152 fp32
  // FLOP / 5e13 = 3.682304e-8 s. The copy term wins.
  const Definition def = shipped_definition(kGdnDecode);
  const AxisValues axes = axes_with(def, {{"batch_size", 2}});
  const CallCost cost = minimal_call_cost(def, axes, zero_inputs(def, axes));
  EXPECT_DOUBLE_EQ(floor_seconds(cost, sample_ceilings()), 2109568.0 / 2e12);
}

// ---- ceilings JSON -------------------------------------------------------------------------

TEST(RooflineCeilings, JsonRoundTripsThroughTextAndFiles) {
  const MachineCeilings c = sample_ceilings();
  const Json j = c.to_json();
  EXPECT_EQ(j.begin().key(), "gpu");  // declaration order
  EXPECT_EQ(j.size(), 7u);
  const Json parsed = parse_json(j.dump(), "text");
  EXPECT_EQ(MachineCeilings::from_json(JsonCursor(parsed, "text")), c);

  test::ScopedTempDir dir;
  const auto path = dir.path() / "ceilings.json";
  save_ceilings(c, path);
  EXPECT_EQ(load_ceilings(path), c);
}

TEST(RooflineCeilings, ErrorsNameTheFileAndTheField) {
  Json j = sample_ceilings().to_json();
  j.erase("fp8_flops_per_second");
  const std::string missing =
      error_of([&] { MachineCeilings::from_json(JsonCursor(j, "ceilings.json")); });
  EXPECT_NE(missing.find("ceilings.json"), std::string::npos) << missing;
  EXPECT_NE(missing.find("fp8_flops_per_second"), std::string::npos) << missing;

  Json negative = sample_ceilings().to_json();
  negative["copy_bytes_per_second"] = -1.0;
  const std::string bad_rate =
      error_of([&] { MachineCeilings::from_json(JsonCursor(negative, "ceilings.json")); });
  EXPECT_NE(bad_rate.find("ceilings.json: copy_bytes_per_second"), std::string::npos) << bad_rate;

  Json wrong_type = sample_ceilings().to_json();
  wrong_type["empty_kernel_seconds"] = "fast";
  const std::string bad_type =
      error_of([&] { MachineCeilings::from_json(JsonCursor(wrong_type, "ceilings.json")); });
  EXPECT_NE(bad_type.find("empty_kernel_seconds"), std::string::npos) << bad_type;

  test::ScopedTempDir dir;
  const auto path = test::write_file(dir.path() / "c.json", R"({"gpu": "x"})");
  const std::string from_file = error_of([&] { load_ceilings(path); });
  EXPECT_NE(from_file.find(path.string()), std::string::npos) << from_file;
  EXPECT_NE(from_file.find("copy_bytes_per_second"), std::string::npos) << from_file;
}

TEST(Ceilings, DefaultFileIsNamedAfterTheGpu) {
  EXPECT_EQ(default_ceilings_path("NVIDIA H200").string(), ".kh/ceilings/NVIDIA_H200.json");
  EXPECT_EQ(default_ceilings_path("A/B-c").string(), ".kh/ceilings/A_B_c.json");
}

}  // namespace
}  // namespace kh
