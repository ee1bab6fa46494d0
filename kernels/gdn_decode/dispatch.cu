// Route choice for GDN decode. One route today (row tiles); its launch shape is chosen from the
// batch size alone, by the continuous rule in tuning.h: the largest tile whose grid still has
// kMinCtas CTAs. Nothing here depends on exact shapes or pointer values (the grid's cap depends on
// the device's SM count and the kernel's occupancy, resident_ctas.h), and nothing synchronises,
// so the call stays CUDA-graph capturable.
#include "dispatch.h"
#include "route_row_tiles.cuh"

namespace khk::gdn_decode {

namespace {

RowTileShape choose_row_tile_shape(int64_t batch) {
  // Grow warps first (a wider CTA), then passes (more bytes in flight per thread), while the
  // grid keeps kMinCtas CTAs.
  RowTileShape shape{1, 1};
  auto ctas = [&](RowTileShape s) { return batch * kVHeads * tiles_per_head(s.warps, s.passes); };
  while (true) {
    RowTileShape wider = shape;
    if (shape.warps < kMaxWarpsPerCta)
      wider.warps *= 2;
    else if (shape.passes < kMaxPasses)
      wider.passes *= 2;
    else
      break;
    if (ctas(wider) < kMinCtas) break;
    shape = wider;
  }
  return shape;
}

}  // namespace

cudaError_t dispatch(const DecodeArgs& args, cudaStream_t stream) {
  return launch_row_tiles(args, choose_row_tile_shape(args.batch), stream);
}

}  // namespace khk::gdn_decode
