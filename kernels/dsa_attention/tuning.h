// The knobs of the DSA sparse attention route, in one place. Their values come from
// candidate.toml's [params] (the harness passes -DNAME=value; libkhk passes each param's first
// value), so the controller's tuner can search them; this header only names them and checks them.
#pragma once

#if !defined(MAX_SPLITS) || !defined(TMA_GATHER) || !defined(WARPS) || !defined(BLOCK_ROWS)
#error "compile with the [params] of kernels/dsa_attention/candidate.toml (-DMAX_SPLITS=... etc.)"
#endif

namespace khk::dsa_attention {

// Each token's 2048 index slots are dealt round-robin to `splits` CTAs (slot j goes to split
// j % splits), so a token's valid rows spread evenly over its CTAs wherever the padding sits, and
// even one token keeps many SMs gathering. A token's splits are one thread-block cluster and merge
// through distributed shared memory, so MAX_SPLITS is also the cluster size: above 8 it needs
// the non-portable cluster sizes Hopper allows (up to 16). The dispatch picks the most splits,
// at most MAX_SPLITS, whose clusters for all tokens fit on the GPU at once (the runtime's
// occupancy answer, asked once per device).
constexpr int kMaxSplits = MAX_SPLITS;
// Gather each selected row with two bulk copies (TMA: its 1 KiB of ckv, its 128 B of kpe) that
// complete on a stage barrier (1), or with 72 16-byte cp.async (0).
constexpr bool kTmaGather = TMA_GATHER;

// Warps per CTA (one CTA per SM: its shared memory is most of the SM's). 8 give each SMSP two
// warps to hide ldmatrix latency behind, but measured slower on one H200 (kh tune, mean over the
// 23 workloads: 12.4 us against 11.6 us with 4), so 4 is the default.
constexpr int kWarps = WARPS;

// Rows per gathered block, two blocks in flight. 64 take about 150 KB of shared memory, so one
// CTA fits an SM and a 16-CTA cluster needs 16 SMs of one GPC (on one H200 only 7 such clusters
// fit at once, so 8 tokens get 9 splits each); 32 take about 100 KB, two CTAs per SM, and 14
// such clusters fit, but measured slower on one H200 (kh tune, mean over the 23 workloads: 13.2 us
// against 12.2 us with 64; 8 tokens x 2048 rows: 23.3 against 19.3 us under Nsight Compute), as
// the clusters' CTAs then share SMs.
constexpr int kGatherRows = BLOCK_ROWS;

static_assert(kWarps == 4 || kWarps == 8, "WARPS: 4 or 8");
static_assert(kGatherRows == 32 || kGatherRows == 64, "BLOCK_ROWS: 32 or 64");
static_assert(kMaxSplits >= 1 && kMaxSplits <= 16, "MAX_SPLITS: 1 to 16 (a cluster per token)");

}  // namespace khk::dsa_attention
