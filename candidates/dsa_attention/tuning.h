// The knobs of the DSA sparse attention routes, in one place. Their values come from
// candidate.toml's [params] (the harness passes -DNAME=value; libkhk passes each param's first
// value), so the controller's tuner can search them; this header only names them and checks them.
#pragma once

#if !defined(MAX_SPLITS) || !defined(TMA_GATHER) || !defined(MERGE_PDL) || \
    !defined(FUSED_TOKENS) || !defined(SINGLE_CTA_ROWS) || !defined(ROW_SKIP)
#error "compile with the [params] of kernels/dsa_attention/candidate.toml (-DMAX_SPLITS=... etc.)"
#endif

namespace khk::dsa_attention {

// Each token's 2048 index slots are dealt round-robin to `splits` CTAs (slot j goes to split
// j % splits), so a token's valid rows spread evenly over its CTAs wherever the padding sits, and
// even one token keeps many SMs gathering. The dispatch picks the most splits that keep
// T x splits within one wave (one CTA per SM), at most MAX_SPLITS; one split writes the output
// directly, more write partials that a second kernel merges.
constexpr int kMaxSplits = MAX_SPLITS;
// Gather each selected row with two bulk copies (TMA: its 1 KiB of ckv, its 128 B of kpe) that
// complete on a stage barrier (1), or with 72 16-byte cp.async (0).
constexpr bool kTmaGather = TMA_GATHER;
// Launch the merge as a programmatic dependent launch of the split kernel, so its launch overlaps
// the split kernel instead of following it.
constexpr bool kMergePdl = MERGE_PDL;

// Up to FUSED_TOKENS tokens the call is one cooperative launch (merge_heads_in_grid behind a
// grid barrier) instead of a split kernel and a merge kernel: under the official timer's CUPTI
// tracing the host submits the second launch several us after the first, and a short split
// kernel (one token) has finished by then, so the GPU waits (2.9 us of a 10.4 us call on one
// H200, bench/results/2026-11-30_kh_profile_h200.json); with many tokens the split kernel runs
// long enough to hide it. In that launch, when no token has more than SINGLE_CTA_ROWS valid rows,
// each token's first CTA takes them all (a few 64-row blocks) and nothing is merged: the official
// one- and two-token workloads have 20-520 rows.
constexpr int kFusedMaxTokens = FUSED_TOKENS;
constexpr int kSingleCtaMaxRows = SINGLE_CTA_ROWS;

// Skip a block's 16-row groups past its last row (1), or compute all 64 rows (0).
constexpr bool kRowSkip = ROW_SKIP;

static_assert(kMaxSplits >= 1 && kMaxSplits <= 256, "MAX_SPLITS: 1 to 256");
static_assert(kFusedMaxTokens >= 0 && kFusedMaxTokens <= 2, "FUSED_TOKENS: 0 to 2");
static_assert(kSingleCtaMaxRows >= 0 && kSingleCtaMaxRows <= 2048, "SINGLE_CTA_ROWS: 0 to 2048");

}  // namespace khk::dsa_attention
