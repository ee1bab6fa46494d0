// The knobs of the GDN decode routes, in one place. Their values come from candidate.toml's
// [params] (the harness passes -DNAME=value; libkhk passes each param's first value), so the
// controller's tuner can search them; this header only names them and checks they are set.
#pragma once

#if !defined(MIN_CTAS) || !defined(WARPS_PER_CTA) || !defined(MAX_PASSES) || \
    !defined(STATE_LOAD) || !defined(STATE_STORE) || !defined(FAST_GATES) || !defined(WAVES)
#error "compile with the [params] of kernels/gdn_decode/candidate.toml (-DMIN_CTAS=... etc.)"
#endif

namespace khk::gdn_decode {

// How a state element travels between HBM and registers. Every state byte is touched exactly
// once per call, so caching it in L1 only costs capacity; the variants are here to be measured
// (on one H200 all four were within noise of each other). `nc` reads through the read-only path:
// safe for the in-place update only because each element is written by the thread that read it.
enum class CachePolicy {
  cs,   // ld/st.global.cs: streaming, evict first
  nc,   // ld.global.nc.L1::no_allocate (loads only): the read-only path, no L1 line
  ef,   // loads only: no L1 line, an L2 evict_first policy and 256-byte L2 prefetch
  wb,   // the default policy (ld.global.ca / st.global.wb)
};

// A CTA owns a tile of consecutive value rows of one (batch, head) state matrix; tiles are
// 4 rows x warps x passes (4 rows per warp per pass). The dispatch uses the largest tile (warps
// doubled up to WARPS_PER_CTA, then passes up to MAX_PASSES) whose grid keeps kMinCtas CTAs:
// small batches spread over many CTAs (latency: every SM issues a few loads at once), large
// batches get more bytes in flight per thread (bandwidth: fewer, fatter CTAs). Measured on one
// H200: at batch 32, 4 passes (512 CTAs, one wave) took 9.6 us against 10.6 us for 2 passes
// (1024 CTAs, 1.55 waves); elsewhere the knobs were within noise.
constexpr int kMinCtas = MIN_CTAS;          // about 2 CTAs per SM on a 132-SM H200 at 256
constexpr int kMaxWarpsPerCta = WARPS_PER_CTA;
constexpr int kMaxPasses = MAX_PASSES;      // value rows per lane group held in registers
// At most WAVES x (the CTAs the GPU holds at once) CTAs, striding over the tiles: the grid stays
// bounded for any batch and a partial last wave is at most 1/WAVES of the work. At the official
// batches (<= 64) WAVES = 4 launches one CTA per tile; 1, 2 and 4 measured within noise.
constexpr int kWavesPerLaunch = WAVES;
// SFU exponentials and division for the gates (route_row_tiles.cuh), which sit between the first
// loads and the first stores. With SFU softplus as well, batch 1 took 2.08 against 2.22 us on one
// H200, but that softplus lost e^x below x = -16 (a wrong g once exp(A_log) is large), so
// softplus now keeps log1pf and the default is the libm path, as the reference computes it;
// this knob is the tuner's to measure again.
constexpr bool kFastGates = FAST_GATES;
constexpr CachePolicy kStateLoad = CachePolicy::STATE_LOAD;
constexpr CachePolicy kStateStore = CachePolicy::STATE_STORE;

static_assert(kMaxWarpsPerCta == 1 || kMaxWarpsPerCta == 2 || kMaxWarpsPerCta == 4 ||
                  kMaxWarpsPerCta == 8,
              "WARPS_PER_CTA: 1, 2, 4 or 8");
static_assert(kWavesPerLaunch >= 1, "WAVES: at least 1");
static_assert(kMaxPasses == 1 || kMaxPasses == 2 || kMaxPasses == 4, "MAX_PASSES: 1, 2 or 4");
static_assert(kStateStore == CachePolicy::cs || kStateStore == CachePolicy::wb,
              "STATE_STORE: cs or wb (nc and ef are load policies)");

}  // namespace khk::gdn_decode
