// The controller's heuristics, in one place: where a profile stops being "memory-bound" and starts
// being "latency-bound", when a run of rounds is a plateau. Each is a named constant with the
// reason for its value; the classification (bottleneck_state.cpp) and the supervisor
// (supervisor.cpp) read nothing else.
#pragma once

namespace kh::ctl {

// A call whose span is within this factor of the empty-kernel span spends its time launching.
constexpr double kLaunchBoundSpanFactor = 3.0;
// Gaps between a call's kernels above this share of its span: launch overheads dominate.
constexpr double kLaunchGapShare = 0.4;
// Nsight Compute's "% of peak" above which a unit is the limiter, and the margin by which it must
// lead the other unit (otherwise both are busy and the kernel is balanced).
constexpr double kBoundThroughputPct = 60.0;
constexpr double kBoundLeadPct = 15.0;
// Both SM and memory throughput below this: the kernel waits on latency (dependent loads, syncs).
constexpr double kLatencyBoundThroughputPct = 40.0;
// Fewer waves than this: most SMs sit idle for part of the kernel.
constexpr double kUnderfilledWaves = 0.75;
// Local-memory traffic above this many bytes per thread of the grid: register spills matter.
constexpr double kSpillBytesPerThread = 8.0;
// Theoretical occupancy below this percentage, with registers or shared memory the limit.
constexpr double kLowOccupancyPct = 25.0;
// Global load sectors per request above this (4 is a fully used 128-byte warp access of 4-byte
// words; 16-byte vector loads reach 16): the warp's addresses scatter.
constexpr double kUncoalescedSectorsPerRequest = 16.0;

// Supervisor: rounds without a promotion that make a plateau; how far back a repeated
// (state, direction) counts as a cycle; how many consecutive promotions below the minimum effect
// make diminishing returns; a retained latency this much worse than the best seen is a regression.
constexpr int kPlateauRounds = 3;
constexpr int kCycleWindowRounds = 6;
constexpr int kDiminishingRounds = 2;
constexpr double kRegressionTolerance = 0.02;

}  // namespace kh::ctl
