// The knobs of the token-serial route (route_token_serial.cuh), in one place. Their values come
// from candidate.toml's [params] (the harness passes -DNAME=value; libkhk passes each param's
// first value); this header only names them and checks they are set.
#pragma once

#if !defined(SERIAL_WARPS) || !defined(SERIAL_LANES) || !defined(SERIAL_ROUND) || \
    !defined(SERIAL_BLOCK) || !defined(SERIAL_GUESS_FIRST_BLOCK)
#error "compile with the [params] of candidate.toml (-DSERIAL_WARPS=... etc.)"
#endif

namespace khk::gdn_prefill {

// Warps per CTA. A CTA holds (32 / SERIAL_LANES) x SERIAL_WARPS value rows of one head, and a
// head takes 128 / rows CTAs: 4 warps of 8 lanes per row give 16 rows, 8 CTAs per head, 64 CTAs
// per sequence, one warp per SM sub-core for a single sequence.
constexpr int kSerialWarps = SERIAL_WARPS;
// Lanes sharing one value row (each holds 128 / lanes of its keys). 16 halves each lane's
// arithmetic and doubles the warps (a single sequence then covers 128 SMs) for one more exchange
// step per reduction; 8 suits two or more sequences, whose warps already fill the SMs.
constexpr int kSerialLanes = SERIAL_LANES;
// Tokens per reduction round. Token t+1's dot products need the row after token t, but
// row_{t+1} . x = g_t (row_t . x) + delta_t (k_t . x): a round reduces the dot products of R
// tokens with the row as it was before the round in one exchange, then runs the R-step recurrence
// on scalars (k_i . k_j and k_i . q_j come from the staging, shared by all rows), then applies
// the R rank-1 updates. The exchange latency is paid once per round instead of once per token.
constexpr int kSerialRound = SERIAL_ROUND;
// Tokens whose k, q, v, gates and in-round dot products are staged in shared memory at a time:
// the next block's loads are in flight while the current one runs, and it is converted between
// blocks, so a larger block means fewer pauses in the chain and more shared memory.
constexpr int kSerialBlock = SERIAL_BLOCK;
// Sequence 0's CTAs load their first block as tokens from 0, and their state rows, before reading
// cu_seqlens (1), keeping the block where the sequence starts at token 0 and its first block is
// as long as the guess; or read cu_seqlens first (0). The route's calls are a few dependent DRAM
// reads long (3.9 us at 6 tokens on one H200, 0.54 of it the empty kernel): cu_seqlens, then the
// block and the rows, then the staging and the tokens. The guess takes the first read off the
// chain wherever the call is one sequence (most of the route's official workloads).
constexpr bool kSerialGuessFirstBlock = SERIAL_GUESS_FIRST_BLOCK != 0;

static_assert(kSerialWarps == 2 || kSerialWarps == 4 || kSerialWarps == 8 || kSerialWarps == 16,
              "SERIAL_WARPS: 2, 4, 8 or 16");
static_assert(kSerialLanes == 8 || kSerialLanes == 16, "SERIAL_LANES: 8 or 16");
static_assert(kSerialRound == 1 || kSerialRound == 2 || kSerialRound == 4, "SERIAL_ROUND: 1, 2 or 4");
static_assert(kSerialBlock == 16 || kSerialBlock == 32 || kSerialBlock == 64,
              "SERIAL_BLOCK: 16, 32 or 64");

}  // namespace khk::gdn_prefill
