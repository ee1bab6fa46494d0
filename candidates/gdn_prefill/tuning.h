// The knobs of the GDN prefill routes, in one place. Their values come from candidate.toml's
// [params] (the harness passes -DNAME=value; libkhk passes each param's first value), so the
// controller's tuner can search them; this header only names them and checks they are set.
#pragma once

#if !defined(MIN_CTAS) || !defined(MAX_SLABS) || !defined(SPLIT_OPERANDS) || \
    !defined(SERIAL_MAX_TOKENS) || !defined(CP_MAX_GROUPS) || !defined(CP_MIN_TOKENS) || \
    !defined(SPLIT_MAX_CHAINS) || !defined(CHAIN_MAX_SLABS) || !defined(PREP_WARPS) || \
    !defined(CHAIN_COPIES) || !defined(PREP_CTAS_PER_SM) || !defined(CHAIN_KSPLIT) || \
    !defined(SPLIT_CP) || !defined(SMALL_CHUNK_MIN_TOKENS) || !defined(SMALL_CHUNK_WIDE_ITEMS) || \
    !defined(SMALL_CP_MAX_GROUPS) || !defined(SMALL_CP_CTAS) || !defined(SMALL_CP_GROUP_TOKENS) || \
    !defined(SMALL_CP_MIN_GROUPS) || !defined(SMALL_FOUR_PRODUCER_CTAS) || \
    !defined(SMALL_CP_LONG_GROUP_TOKENS) || !defined(SMALL_CP_LONG_MIN_GROUPS) || \
    !defined(SMALL_CHUNK_MIN_AVG_TOKENS) || !defined(SMALL_CP_OVERLAP_MIN_SEQS) || \
    !defined(SMALL_RANK_MIN_CTAS) || !defined(SMALL_PERSISTENT_CTAS) || \
    !defined(SMALL_PERSISTENT_MIN_ITEMS) || !defined(SMALL_RANK_NARROW_MIN_CTAS) || \
    !defined(SMALL_DECOUPLED) || !defined(SMALL_KEY_PARTS) || \
    !defined(SMALL_SPLIT_GATES) || !defined(SMALL_SPLIT_PHASE_B) || \
    !defined(SMALL_KEY_SPLIT_MAX_CTAS) || !defined(SMALL_EARLY_START) || \
    !defined(SMALL_SCALED_STATE) || !defined(SMALL_SCALE_QK) || !defined(SMALL_CP_STAGGER) || \
    !defined(SMALL_CORRECT_ONE_TRIP) || !defined(SMALL_SCAN_MAP_BUFFERS) || \
    !defined(SMALL_CORRECT_TOKENS) || !defined(SMALL_CORRECT_SHORT_FIRST) || \
    !defined(SMALL_CORRECT_PRESPLIT) || !defined(SMALL_CORRECT_FINE_TOKENS) || \
    !defined(SMALL_CORRECT_FINE_MAX_GROUP_TOKENS) || !defined(SMALL_CORRECT_MIN_SMEM) || \
    !defined(SMALL_CP_SCAN_EARLY) || !defined(SMALL_CP_MAP_BY_KIND)
#error "compile with the [params] of kernels/gdn_prefill/candidate.toml (-DMIN_CTAS=... etc.)"
#endif

namespace khk::gdn_prefill {

// Calls of at least kSmallChunkMinTokens tokens (all sequences together) whose sequences average
// at least kSmallChunkMinAvgTokens (or that the token-serial route would not take) take the
// small-chunk route (route_small_chunk.cuh: 16-token chunks, the key-only work on producer warps
// ahead of a chain of four small tensor-core products per chunk) before every other route; 0:
// never. Below, the token-serial route's shorter pipeline wins (one H200: 3.9 against 6.2 us at
// 6 tokens, 5.7 against 7.0 us at 24). Its time steps up with each SERIAL_BLOCK (32) tokens of
// the longest sequence, which the host cannot see: at 35-61 tokens over 1-2 sequences averaging
// 20 or more the chunks were 5-26 % faster, at 32-35 tokens over 2 sequences averaging 16-18 4-7 %
// slower (one H200, official counts; bench/results/2026-12-03_gdn_prefill_sweeps_h200.json).
constexpr long long kSmallChunkMinTokens = SMALL_CHUNK_MIN_TOKENS;
constexpr long long kSmallChunkMinAvgTokens = SMALL_CHUNK_MIN_AVG_TOKENS;
// The small-chunk route's CTAs hold 2 chain warps (32 value rows, 4 CTAs per (sequence, head))
// unless the call has at least this many (sequence, head) pairs, when they hold 8 (one CTA per
// pair): with few pairs more, narrower CTAs spread the chains over more SMs; with many, the wide
// ones stop repeating the producer work four times.
constexpr long long kSmallChunkWideItems = SMALL_CHUNK_WIDE_ITEMS;
// The small-chunk route's producer warps: four (a load, a gate, a solve and a scale warp;
// small_chunk_layout.h) in wide CTAs, in the context-parallel form's and in narrow CTAs when the
// call has at most kSmallFourProducerCtas of them, else two (load and gates on one warp, the
// inverse and the scalings on the other). Four shorten the pipeline's iteration (each role about
// as long as a chain warp's step): 7-31 % faster at 64-8191 tokens and at 8192 tokens on one H200
// (bench/results/2026-12-02_gdn_prefill_four_producers_h200.json). Narrow CTAs past about two per
// SM share SMs with each other's producers, and there the two extra warps lost (3999 tokens x 13
// sequences, 416 narrow CTAs: -4.9 %). 0: two producers in every narrow CTA.
constexpr long long kSmallFourProducerCtas = SMALL_FOUR_PRODUCER_CTAS;
// The small-chunk route's CTAs of four producers -- the plain route's, the persistent ones and the
// context-parallel map pass's -- run their roles decoupled (1: each role walks the chunks at its
// own pace, handing buffers on through shared-memory barriers; route_small_chunk_decoupled.cuh)
// or in lockstep (0: one CTA barrier per iteration). The CTAs of two producers (one warp holding
// two roles) stay in lockstep.
constexpr bool kSmallDecoupled = SMALL_DECOUPLED != 0;
// The decoupled narrow CTAs (2 groups of 16 value rows, four producers) split each group's state
// by keys over kSmallKeyParts chain warps (2 or 4; small_chunk_chain_split.cuh: each warp its part
// of the state products, one exchange of partial D and Dq per chunk) or hold it in one (1). Once
// decoupled, a chunk costs what the chain warp's step costs (about 690 instructions at ~2.9 cycles
// each on one H200); the split shortens its MMA chains and its instruction count by the parts,
// and adds the exchange.
constexpr int kSmallKeyParts = SMALL_KEY_PARTS;
static_assert(kSmallKeyParts == 1 || kSmallKeyParts == 2 || kSmallKeyParts == 4,
              "SMALL_KEY_PARTS is 1, 2 or 4");
// ... for calls of at most this many narrow CTAs; above, the unsplit decoupled CTAs. A key-split
// CTA takes about 48-50 K of an SM's 64 K registers (2 parts: 11 warps at 132 registers; 4: 15 at
// 102), so a second one waits for an SM of its own where two unsplit ones (6 warps at ~150)
// share it: past one CTA per SM (132 on an H200) the split would run its CTAs in two waves.
constexpr long long kSmallKeySplitMaxCtas = SMALL_KEY_SPLIT_MAX_CTAS;
// The key-split CTAs have a second gate warp (1: the two take the even and the odd chunks) or one
// (0). A chunk's gate work (the gates, K K^T, Q K^T and A) does not depend on the chunk before,
// so two warps double the role's throughput; by the 2026-12-03 profiles the gate warp (~590
// instructions per chunk) is next in length after a chain warp, which the key split shortens.
constexpr bool kSmallSplitGates = SMALL_SPLIT_GATES != 0;
// ... and a second solve warp and scale warp (1: the even and the odd chunks' phase B) or one of
// each (0): the solve warp's inverse (~400-590 instructions per chunk by the same profiles) would
// bound a chain step shortened by the split.
constexpr bool kSmallSplitPhaseB = SMALL_SPLIT_PHASE_B != 0;
// The decoupled plain route's CTAs (index order) start what they can before reading cu_seqlens
// (1; route_small_chunk_decoupled.cuh, small_start_early): the L2 fetches their state rows and
// gate parameters, and the CTAs of sequence 0 request their first tile as tokens 0-15, keeping it
// where the sequence starts at token 0 with a full chunk; or read cu_seqlens first (0). A small
// call's first chunk is a chain of dependent DRAM reads (cu_seqlens, the tile, then the products
// and the chain step): this takes one round trip off it (about 0.5-1 us of a ~5 us start on one
// H200 with the L2 flushed, if the round trips measured elsewhere hold here; not yet measured).
constexpr bool kSmallEarlyStart = SMALL_EARLY_START != 0;
// In the decoupled CTAs (plain, key-split, persistent, the map pass) the scale warp computes a
// chunk's Q K^T itself as soon as the chunk's tile lands (1; small_query_keys), beside the gate
// warp's phase A, which keeps K K^T, A and the gates; or the gate warp computes both (0). Phase A
// is on the critical path of every small call's fill (about 1 us of one warp's serial work before
// the first chain step; ROOFLINE.md "Where issue 10's 5 us stands") and, in a wide CTA, its MMAs
// share one sub-partition's tensor pipe with two chain warps; the scale warp's P' needs Q K^T in
// the very fragments the product leaves in each lane, so it costs no exchange. The scale warp
// then also waits for the tile (with two phase-B lanes the tile ring has an even number of slots:
// small_chunk_layout.h).
constexpr bool kSmallScaleQK = SMALL_SCALE_QK != 0;
// The small-chunk chain holds its state rows as M / s with the warp-uniform scalar s beside them
// (SMALL_SCALED_STATE = b > 0; small_chunk_chain.cuh, small_update_rows), so that a chunk's decay
// multiplies s instead of the 64 accumulators of each lane (about a tenth of a chain step's
// instructions; 6.6 % of the step alone on one H100:
// bench/results/2026-12-06_gdn_chain_step_h100.json): D and Dq of the held rows are scaled by s
// through the per-token factors they are multiplied by anyway, the update's w is divided by the
// new s, and the rows are multiplied by s once when stored. Where s has fallen below 2^-b the
// chain multiplies the rows by it at the next chunk's start and starts again from s = 1 (a branch
// there, not between the update's operands and its MMAs, where a first form lost 3 % on the
// narrow CTAs), so at a chunk's start the held rows are within 2^b of the state's magnitude
// (within the chunk, 2^(b + 24): below). The key-split narrow CTAs' chain (small_chunk_chain_split.cuh)
// keeps its rows unscaled: a part multiplies only half the keys' rows, and there the scaled form
// lost 2 % on one H200. 0: the rows themselves each chunk everywhere (the library's form before).
// The emulation tests also run b = 1, where the rescale comes every few chunks.
constexpr bool kSmallScaledState = SMALL_SCALED_STATE > 0;
constexpr float kSmallMinStateScale =
    kSmallScaledState ? 1.0f / static_cast<float>(1ull << SMALL_SCALED_STATE) : 0.0f;
// ... and a chunk's new s is kept at least 2^-24 below that bound (2^-56 at b = 32), so that w / s
// stays finite after a chunk that decays the state to almost nothing at once. The state such a
// chunk keeps is then off by at most 2^-24 of the state before it (fp32's own rounding), and
// until the next chunk's rescale the held rows are at most 2^(b + 24) times the state: fp32's
// range for states below ~4.7e21 at b = 32 (a floor of 2^-(b + 32) would allow only ~1.8e19).
constexpr float kSmallFloorStateScale = kSmallMinStateScale / static_cast<float>(1ull << 24);
// The small-chunk route in context-parallel groups (route_small_chunk_cp.cuh: a map pass, an fp32
// scan and a correction, 8 chain warps and four producers per CTA) where the workspace holds the
// groups' matrices and per-token partials: in the most groups per sequence, from 2 to
// kSmallCpMaxGroups (below 2: never), whose map pass (N * 8 * (2 groups - 1) CTAs) fits
// kSmallCpCtas CTAs -- a second CTA on an SM slows both chains, each bound by its own latency at
// about one CTA per SM -- and whose groups average at least kSmallCpGroupTokens tokens (each walk
// pays the pipeline's fill of kSmallChainLag steps, and every group one scan step).
constexpr int kSmallCpMaxGroups = SMALL_CP_MAX_GROUPS;
constexpr long long kSmallCpCtas = SMALL_CP_CTAS;
constexpr long long kSmallCpGroupTokens = SMALL_CP_GROUP_TOKENS;
// ... and only from kSmallCpMinGroups groups: each group adds a scan step (about 3.7 us on one
// H200) and the map pass three walks where the plain route has one (before the correction
// replaced the finish pass, each group was walked twice and few groups lost: one H200 at 1-5
// sequences, 3-5 groups 1.0-1.5x slower than the plain route, 9 groups 1.25-1.5x faster,
// bench/results/2026-12-02_gdn_prefill_small_chunk_cp_knobs_h200.json).
constexpr int kSmallCpMinGroups = SMALL_CP_MIN_GROUPS;
// The correction runs beside the scan (programmatic dependent launch, each group waiting for its
// entry state) from this many sequences. Beside the fp32 scan of 6ccd14d30333 it slowed one long
// sequence 3-7 % (bench/results/2026-12-04_gdn_prefill_correction_overlap_h200.json); beside the
// cluster scan it gains there too (one H200: 1377 x 1 and 2107 x 1 1.19x faster overall at 1,
// 1.06x at 2; bench/results/2026-12-04_gdn_prefill_cluster_scan_h200.json).
constexpr long long kSmallCpOverlapMinSeqs = SMALL_CP_OVERLAP_MIN_SEQS;
// The groups of a sequence grow by this many chunks each, the first shortest (0: as equal as whole
// chunks allow; small_chunk_groups.h, group_tokens), and the scan starts while the map pass runs
// (a programmatic dependent launch), taking each group's matrices as soon as its walks are done
// (per-walk flags). With equal groups every walk ends at once and the scan's groups - 1 dependent
// steps (about 3 us each) all follow the map pass; when group g + 1 ends about one scan step after
// group g, step g runs while the later groups still walk, and the call ends about one step after
// the last group instead of groups - 1 steps after all of them. The stagger that matches is the
// scan step over the wide CTA's chain step (about 1.9 us per 16-token chunk in the map pass on one
// H100). A sequence too short for the whole stagger gets as much of it as its chunks allow
// (group_tokens); one of fewer than G + d G (G - 1) / 2 chunks starts with empty groups, which
// walk no chunk and pass their entry state on.
constexpr int kSmallCpStaggerChunks = SMALL_CP_STAGGER;
// 1: a correction CTA (small_chunk_correct.cuh) issues every read it makes (E_g's rows, its 64
// tokens' qmap rows and partials) before it uses any, one dependent memory round trip after its
// waits; 0: two per 16-token slice (the qmap slice, a barrier, then its partials), eight in all.
// By the timeline of ffb523b8154b (bench/results/2026-12-06_gdn_prefill_cp_timeline_h100.json)
// a group's corrections end 8 us after its entry state at 1377 x 1, for 2 us of arithmetic.
constexpr bool kSmallCorrectOneTrip = SMALL_CORRECT_ONE_TRIP != 0;
// Tokens per correction CTA (a multiple of the 16-token chunk): a group's corrections are the
// last work of the call after the scan's last step (~9.5 us after it at 1377 x 1 on one H100,
// bench/results/2026-12-07_gdn_prefill_cp_timeline_h100.json), so fewer tokens per CTA trade more
// CTAs (each reading E_g's 64 KB again) for a shorter last CTA: 7.4-9.5 us a CTA at 64 tokens,
// 4.9-5.6 at 32, and 1377 x 1 61.5 -> 57.7 us on a timeline of one H100 (the file below).
// But where the corrections queue for SMs behind long walks (two sequences in 4 groups) they are
// a throughput job, and twice the CTAs, each with its fixed cost and E_g's 64 KB, lose: one H100,
// cupti, 32 against 64 tokens: 1377 x 1 -8.3 %, 2107 x 1 -3.7 %, 3271 x 2 +6.3 %, 5709 x 2
// +2.8 %, in either order (bench/results/2026-12-07_gdn_prefill_correction_candidate_h100.json).
// So the size goes by the load: kSmallCorrectTokens (the most, which sizes the shared memory)
// where a group can be longer than kSmallCorrectFineMaxGroupTokens, else kSmallCorrectFineTokens
// (small_correct_tile_tokens). The bound a call's groups have (longest_group_tokens, from the
// call's tokens and group count) is 416 and 512 at 1377 x 1 and 2107 x 1 (8 groups: the fine
// tiles gained) and 944 and 1552 at 3271 x 2 and 5709 x 2 (4 groups: they lost); long groups are
// long walks, behind which the corrections queue. 0: kSmallCorrectTokens everywhere.
constexpr int kSmallCorrectTokens = SMALL_CORRECT_TOKENS;
constexpr int kSmallCorrectFineTokens = SMALL_CORRECT_FINE_TOKENS;
constexpr long long kSmallCorrectFineMaxGroupTokens = SMALL_CORRECT_FINE_MAX_GROUP_TOKENS;
// 1: the correction grid takes the sequences shortest first (then group, head, tile), because a
// shorter sequence's groups are shorter, so its walks end and its scan reaches its entry states
// first; 0: group first, then sequence. With group first, the CTAs of the long sequence's group 1
// hold the SMs the map pass leaves free while they wait for its entry state, and the short
// sequence's corrections, ready long before, start only when the map pass ends (5709 x 2 on one
// H100: ready at 86 us, started at 99.6, the call's last work at 142.6 of 146.1).
constexpr bool kSmallCorrectShortFirst = SMALL_CORRECT_SHORT_FIRST != 0;
// 1 (with the one-trip correction): the CTA splits its staged qmap rows into bf16 hi and lo once,
// and its warps take their B fragments by ldmatrix; 0: each warp splits the fragments it reads.
// Every one of the 8 warps reads every token's qmap, so 0 splits each value 8 times: a correction
// CTA takes ~2 us plus ~3 us per 32 tokens on one H100, more than its bytes or its mma.sync
// explain (bench/results/2026-12-07_gdn_prefill_correction_tiles_timeline_h100.json).
constexpr bool kSmallCorrectPresplit = SMALL_CORRECT_PRESPLIT != 0;
// The shared memory a correction CTA asks for at least, in bytes (0: what it stages). A scan CTA
// takes 160 KB (163,864 B) and 256 threads at 144 allocated registers, leaving 67,560 B of an SM's
// 228 KB once each CTA's reserved 1 KB is counted: a correction CTA staging 32 tokens (51 KB with
// the presplit, 104 registers) fits beside it, one staging 64 does not (67 KB without the presplit,
// ~1.6 KB too many here, ~1 KB in the library's folder; 101 KB with it). That assumes the driver
// set the SM's carveout to the full 228 KB (nothing here asks for a carveout). Beside a scan CTA
// a correction competes with the scan's steps once its entry state is ready; padding the request
// keeps it off the scan's SMs. Measured on one H100 (2026-12-07): 32-token corrections padded off
// the scan's SMs time like unpadded ones, so residency is not what the tile size changes.
constexpr int kSmallCorrectMinSmem = SMALL_CORRECT_MIN_SMEM;
// The context-parallel scan launched while the map pass runs (1: a programmatic dependent launch,
// its CTAs resident from the map pass's start on the SMs the walks leave free, polling for the
// groups' walks) or after it (0: an ordinary launch; no scan CTA beside the walks). A diagnostic,
// measured on one H100 (2026-12-07): at 0 the two-sequence calls' late walks stay late, and the
// late scan costs 0.956x over the context-parallel-sized workloads.
constexpr bool kSmallCpScanEarly = SMALL_CP_SCAN_EARLY != 0;
// The map pass's CTAs ordered by walk kind (1: every head's group-0 walk, then the B_g walks, then
// the A_g walks) or head-major (0). The kinds are three instantiations of the walk, and CTAs land
// on a TPC's two SMs in consecutive pairs: two kinds on one TPC ended their walks up to 16 us (of
// ~100) late on one H100 at two sequences (route_small_chunk_cp.cuh, small_cp_map_cta).
constexpr bool kSmallCpMapByKind = SMALL_CP_MAP_BY_KIND != 0;
// The context-parallel scan's shared-memory buffers for the maps it copies in
// (small_chunk_scan.cuh; a map and its remainders take one each): 2, the next step's remainders
// copied once this step's products that read them are done and its map after the rest; 3 (224 KB, a
// whole SM), the next remainders copied as the step starts and the next map once the remainders are
// read, so that both copies overlap products.
constexpr int kScanMapBuffers = SMALL_SCAN_MAP_BUFFERS;
// ... or from kSmallCpLongMinGroups groups when they average at least kSmallCpLongGroupTokens
// tokens: long groups pay the fill and the scan step back (with the finish pass, 2 sequences in
// 5 groups on one H200: 5709 tokens 231 -> 191 us, 3271 tokens 132 -> 122, while 2040 tokens,
// 204 per group, went 71 -> 81; bench/results/2026-12-03_gdn_prefill_sweeps_h200.json). From 4:
// with the correction, 3 sequences in 3 groups (2857 tokens) lost 5-7 % and 5 sequences in 2
// groups (3028 tokens) 38 %: the longest sequence's half, walked by a wide CTA, took 104 us
// where the plain route's narrow CTAs take 87 for all of it (one H200, kh profile;
// bench/results/2026-12-04_gdn_prefill_cp_correction_h200.json). 0: the group count alone
// decides.
constexpr long long kSmallCpLongGroupTokens = SMALL_CP_LONG_GROUP_TOKENS;
constexpr int kSmallCpLongMinGroups = SMALL_CP_LONG_MIN_GROUPS;

// Calls of at most this many tokens (all sequences together) take the token-serial route
// (route_token_serial.cuh, its knobs in serial_tuning.h), the others the chunked route. The
// serial route's time grows with the longest sequence's tokens and its issue work with all of
// them, while the chunked route pays a fixed cost per 64-token chunk on its chain; the total is
// the one size known on the host without a sync, and the longest sequence is at most the total.
// 0: never serial.
constexpr long long kSerialMaxTokens = SERIAL_MAX_TOKENS;

// The context-parallel route (route_context_parallel.cuh) cuts each sequence into groups of whole
// chunks computed in parallel, at three passes of chunk work instead of one: it is taken when the
// chunked route's (sequence, head, slab) items leave at least half of kMinCtas idle (groups =
// kMinCtas / items >= 2, at most kCpMaxGroups; 0 or 1: never) and the sequences average at least
// kCpMinTokensPerSeq tokens, so each group still holds several chunks.
constexpr int kCpMaxGroups = CP_MAX_GROUPS;
constexpr long long kCpMinTokensPerSeq = CP_MIN_TOKENS;

// A head's 128 value columns split into 1, 2, 4 or 8 slabs, one CTA each (dispatch.cu). More
// slabs spread a few sequences over more SMs but repeat the chunk's key-only work (K K^T, Q K^T,
// the inverse, W) once per slab, with fewer warps to share it. The dispatch takes the fewest
// slabs that give the grid kMinCtas CTAs, and never more than kMaxSlabs.
constexpr int kMinCtas = MIN_CTAS;   // about one CTA per SM of a 132-SM H200 at 132
constexpr int kMaxSlabs = MAX_SLABS;
// Which computed MMA operands go through the bf16 tensor cores as hi + lo pairs (~16 mantissa
// bits instead of 8; inputs q, k, v are bf16 already and exact). `state`: the state path (M in
// M W^T, Tw, Tu, the pseudo-values in the state update) -- with plain bf16 the final state drifts
// to ~7e-3 of the 1e-2 tolerance over 2048-8192 weakly decaying tokens (tools/gdn_chunk_model.py),
// split it stays at ~2e-3. `all` adds the output path (M in M Q^T, the pseudo-values and P in
// Vn^T P^T), which the adversarial `extreme` inputs (values x1e3, so 1e-2 absolute is 1e-5
// relative) need: with `state`, 2-4 % of their outputs miss the tolerance. Each level costs
// MMAs: about 1.5x (`state`) and 1.8x (`all`) those of plain bf16 per chunk.
enum class SplitOperands { none, state, all };
constexpr SplitOperands kSplitOperands = SplitOperands::SPLIT_OPERANDS;
constexpr bool kSplitState = kSplitOperands != SplitOperands::none;
constexpr bool kSplitOutput = kSplitOperands == SplitOperands::all;

// The split route (chunk_prep.cuh, then the chunked kernel's kPrepared form) computes every
// chunk's key-only work in parallel first and leaves the chain only the state products. It pays
// where the chunked route's one CTA per (sequence, head) chain leaves SMs idle, and loses where
// those chains fill the GPU on their own (the prep then adds waves of work before the chain
// starts: 8192 tokens over 20-57 sequences, 134 against 212 us on one H200). So it is taken,
// before the context-parallel and the chunked routes, when the call has at most
// kSplitMaxChains (sequence, head) chains (N * 8; 0: never) and the workspace holds the
// records. Its chain repeats no key work per value slab, so it takes the fewest slabs of 2, 4
// or 8 (at most kChainMaxSlabs) that give kMinCtas CTAs; a slab holds at most 64 value columns
// there, as the double-buffered records leave no room for a 128-column one. The prep kernel
// runs kPrepThreads per (chunk, head).
constexpr long long kSplitMaxChains = SPLIT_MAX_CHAINS;
constexpr int kChainMaxSlabs = CHAIN_MAX_SLABS;
constexpr int kPrepThreads = 32 * PREP_WARPS;
// How the split route's chain loads a chunk: 0 every piece as 16-byte cp.async from every
// thread; 1 the record as one bulk copy per part from warp 0, the K, Q and V rows as before;
// 2 the rows as bulk copies too. The chain is bound by instruction issue, and 1 takes most of
// the copy instructions off it: 3 % faster than 0 on the few long sequences and 7 % on the other
// 257-8191-token workloads, one H200 (bench/results/2026-12-02_gdn_prefill_chain_knobs_h200.json);
// 2 was 1.26-1.53x slower (bench/results/2026-12-02_gdn_prefill_bulk_chain_h200.json).
constexpr int kChainCopies = CHAIN_COPIES;
// Prep CTAs per SM: 2 builds Tw over Q (106 KB of shared memory instead of 124 KB).
constexpr int kPrepCtasPerSm = PREP_CTAS_PER_SM;
// Warps per 16 value rows in the split route's chain: with 2,
// each of the pair holds half of the rows' 128 key columns of the state, so the M W^T, M Q^T
// and state-update MMAs of a warp halve, for one exchange of the Vn^T and O^T partial sums per
// chunk through shared memory. Only for slabs of at most 32 value columns (the exchange needs
// shared memory a 64-column slab does not have left); 1 on wider slabs. 2 measured 1.34x faster
// on the few long sequences and 1.27x on the other 257-8191-token workloads (same file).
constexpr int kChainKSplit = CHAIN_KSPLIT;
// The split route in context-parallel groups: its kTransfer and
// kLocal passes run the prepared chain without values or output (only -W, Tu and the gates of a
// record), so three passes of it cost less than three of the chunked route's. Taken (1; 0:
// never) where the chain at kSplitCpSlabs slabs per head leaves at least half of kMinCtas idle,
// the sequences average at least kCpMinTokensPerSeq tokens, in up to kCpMaxGroups groups. Off
// (0): with the key split its three passes measured 1.28x slower than the one chain on the few
// long sequences (same file).
constexpr bool kSplitCp = SPLIT_CP != 0;
constexpr int kSplitCpSlabs = 2;  // 64-column slabs: the fewest CTAs per group the chain allows

// Up to this many sequences the chunked and small-chunk routes hand the sequences to their CTAs
// longest first (sequence_order.cuh: each CTA ranks the lengths itself, O(N^2 / threads) in its
// prologue); beyond it, index order.
constexpr int kRankMaxSeqs = 128;
// The small-chunk route's wide CTAs (one per SM) rank the sequences (above) from this many CTAs:
// with fewer, every CTA of the call is resident at once (132 SMs on an H200), the order changes
// nothing, and the ranking's two barriers would only delay the walks' start. Beyond one wave, the
// sequences' lengths (up to 8x apart in the official mix) set how long the last wave runs: 8192
// tokens over 20-57 sequences +16.3 % on one H200 (kh promote's full gate).
constexpr long long kSmallRankMinCtas = SMALL_RANK_MIN_CTAS;
// Narrow CTAs (two producers) rank them only from this many CTAs: they share SMs (three per SM on
// an H200, 396 at once), so while all fit at once the order also decides which chains share an
// SM, and ranked from 133 CTAs they measured -1.3 % at 1024-4095 tokens x 4-15 sequences. Past the
// resident capacity the late CTAs start in waves as wide ones do: 4124 x 15 (480 CTAs) +9 %, but
// 3999 x 13 (416, a few CTAs past it) -1.5 % (one H200;
// bench/results/2026-12-04_gdn_prefill_persistent_narrow_rank_h200.json), so from 448, an eighth
// past the capacity. Narrow CTAs with four producers never rank (at most kSmallFourProducerCtas
// of them, which fit at once).
constexpr long long kSmallRankNarrowMinCtas = SMALL_RANK_NARROW_MIN_CTAS;
// Calls of wide CTAs with at least kSmallPersistentMinItems (sequence, head) items (and at most
// kRankMaxSeqs sequences) run kSmallPersistentCtas persistent CTAs instead
// (route_small_chunk_persistent.cuh), each walking its share of the items as one stream of
// chunks, so that the pipeline fills once per CTA instead of once per item; 0 CTAs: never. From
// 133 items, kh promote's full gate on one H200 (8192 tokens) measured 8192 x 56 and 57 8-10 %
// faster, 37-48 sequences 0-5 % faster, 20-32 sequences up to 9 % slower (the snake's static
// deal loses to the hardware's dynamic one when each CTA gets one or two items): +1.3 % at 8192
// tokens, archived. From 330 items (about 2.5 items per CTA, 42 or more sequences): 8192 x 56 and
// 57 8-11 % faster, x 48 3 %, x 43 -2 to +4 % (one interleaved sweep; from 396 items only x 56
// and 57 change).
constexpr long long kSmallPersistentCtas = SMALL_PERSISTENT_CTAS;
constexpr long long kSmallPersistentMinItems = SMALL_PERSISTENT_MIN_ITEMS;

static_assert(kMinCtas >= 1, "MIN_CTAS: at least 1");
static_assert(kSmallChunkMinTokens >= 0, "SMALL_CHUNK_MIN_TOKENS: 0 or more");
static_assert(kSmallChunkMinAvgTokens >= 0, "SMALL_CHUNK_MIN_AVG_TOKENS: 0 or more");
static_assert(kSmallChunkWideItems >= 1, "SMALL_CHUNK_WIDE_ITEMS: 1 or more");
static_assert(kSmallCpMaxGroups >= 0, "SMALL_CP_MAX_GROUPS: 0 or more");
static_assert(kSmallFourProducerCtas >= 0, "SMALL_FOUR_PRODUCER_CTAS: 0 or more");
static_assert(kSmallRankMinCtas >= 0, "SMALL_RANK_MIN_CTAS: 0 or more");
static_assert(kSmallRankNarrowMinCtas >= 0, "SMALL_RANK_NARROW_MIN_CTAS: 0 or more");
static_assert(kSmallPersistentCtas >= 0 && kSmallPersistentCtas < (1 << 30),
              "SMALL_PERSISTENT_CTAS: 0 or more");
static_assert(kSmallPersistentMinItems > kSmallPersistentCtas || kSmallPersistentCtas == 0,
              "SMALL_PERSISTENT_MIN_ITEMS: more items than persistent CTAs");
static_assert(kSmallCpMinGroups >= 2, "SMALL_CP_MIN_GROUPS: 2 or more");
static_assert(kSmallCpOverlapMinSeqs >= 1, "SMALL_CP_OVERLAP_MIN_SEQS: 1 or more");
static_assert(kSmallCpLongGroupTokens >= 0, "SMALL_CP_LONG_GROUP_TOKENS: 0 or more");
static_assert(kSmallCpLongMinGroups >= 2, "SMALL_CP_LONG_MIN_GROUPS: 2 or more");
static_assert(SMALL_SCALE_QK == 0 || SMALL_SCALE_QK == 1, "SMALL_SCALE_QK: 0 or 1");
static_assert(kSmallCpStaggerChunks >= 0 && kSmallCpStaggerChunks <= 16, "SMALL_CP_STAGGER: 0 to 16");
static_assert(SMALL_CORRECT_ONE_TRIP == 0 || SMALL_CORRECT_ONE_TRIP == 1,
              "SMALL_CORRECT_ONE_TRIP: 0 or 1");
static_assert(kScanMapBuffers == 2 || kScanMapBuffers == 3, "SMALL_SCAN_MAP_BUFFERS: 2 or 3");
static_assert(kSmallCorrectTokens == 16 || kSmallCorrectTokens == 32 || kSmallCorrectTokens == 64,
              "SMALL_CORRECT_TOKENS: 16, 32 or 64");
static_assert(kSmallCorrectFineTokens == 16 || kSmallCorrectFineTokens == 32 ||
                  kSmallCorrectFineTokens == 64,
              "SMALL_CORRECT_FINE_TOKENS: 16, 32 or 64 (at most SMALL_CORRECT_TOKENS are used)");
static_assert(kSmallCorrectFineMaxGroupTokens >= 0, "SMALL_CORRECT_FINE_MAX_GROUP_TOKENS: 0 or more");
static_assert(kSmallCorrectMinSmem >= 0 && kSmallCorrectMinSmem <= 227 * 1024,
              "SMALL_CORRECT_MIN_SMEM: 0 to 227 KB");
static_assert(SMALL_CORRECT_SHORT_FIRST == 0 || SMALL_CORRECT_SHORT_FIRST == 1,
              "SMALL_CORRECT_SHORT_FIRST: 0 or 1");
static_assert(SMALL_CORRECT_PRESPLIT == 0 || SMALL_CORRECT_PRESPLIT == 1,
              "SMALL_CORRECT_PRESPLIT: 0 or 1");
// Above 32 the held rows' bound 2^(b + 24) leaves too little of fp32's range for the state.
static_assert(SMALL_SCALED_STATE >= 0 && SMALL_SCALED_STATE <= 32, "SMALL_SCALED_STATE: 0 to 32");
static_assert(kSmallCpCtas >= 1 && kSmallCpGroupTokens >= 1,
              "SMALL_CP_CTAS and SMALL_CP_GROUP_TOKENS: 1 or more");
static_assert(kSerialMaxTokens >= 0, "SERIAL_MAX_TOKENS: 0 or more");
static_assert(kCpMaxGroups >= 0, "CP_MAX_GROUPS: 0 or more");
static_assert(kSplitMaxChains >= 0, "SPLIT_MAX_CHAINS: 0 or more");
static_assert(kChainMaxSlabs == 2 || kChainMaxSlabs == 4 || kChainMaxSlabs == 8,
              "CHAIN_MAX_SLABS: 2, 4 or 8");
static_assert(PREP_WARPS == 4 || PREP_WARPS == 8, "PREP_WARPS: 4 or 8");
static_assert(kChainCopies >= 0 && kChainCopies <= 2, "CHAIN_COPIES: 0, 1 or 2");
static_assert(kPrepCtasPerSm == 1 || kPrepCtasPerSm == 2, "PREP_CTAS_PER_SM: 1 or 2");
static_assert(kChainKSplit == 1 || kChainKSplit == 2, "CHAIN_KSPLIT: 1 or 2");
static_assert(kMaxSlabs == 1 || kMaxSlabs == 2 || kMaxSlabs == 4 || kMaxSlabs == 8,
              "MAX_SLABS: 1, 2, 4 or 8");

}  // namespace khk::gdn_prefill
