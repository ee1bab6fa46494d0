// The knobs of the token-serial route, in one place. Their values come from candidate.toml's
// [params] (the harness passes -DNAME=value); this header only names them and checks they are set.
#pragma once

#if !defined(SERIAL_WARPS) || !defined(SERIAL_BLOCK)
#error "compile with the [params] of candidate.toml (-DSERIAL_WARPS=... -DSERIAL_BLOCK=...)"
#endif

namespace khk::gdn_prefill {

// Warps per CTA. A warp holds 4 value rows (8 lanes per row), so a CTA holds 4 x SERIAL_WARPS
// rows of one head and a head takes 128 / rows CTAs: 4 warps give 8 CTAs per head, 64 CTAs per
// sequence, one warp per SM sub-core for a single sequence. The route is latency-bound at few
// sequences (each token waits for the previous token's row update), so more rows per CTA only
// help when the grid outgrows the SMs.
constexpr int kSerialWarps = SERIAL_WARPS;
// Tokens whose k, q, v and gates are staged in shared memory at a time: the next block's loads
// are in flight while the current one runs, and its gates and k.q are computed between blocks,
// so a larger block means fewer pauses in the chain and more shared memory (36 KB per buffer of
// 32 tokens at 4 warps, two buffers).
constexpr int kSerialBlock = SERIAL_BLOCK;

static_assert(kSerialWarps == 2 || kSerialWarps == 4 || kSerialWarps == 8 || kSerialWarps == 16,
              "SERIAL_WARPS: 2, 4, 8 or 16");
static_assert(kSerialBlock == 16 || kSerialBlock == 32 || kSerialBlock == 64,
              "SERIAL_BLOCK: 16, 32 or 64");

}  // namespace khk::gdn_prefill
