// Profiles into bottleneck states: one case per class, the rule order (a defect before the
// throughput classes), the launch-bound rules, headroom, and a real H200 capture without throughput
// metrics, which must say "unknown" rather than guess.
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/ctl/bottleneck_state.h"
#include "kh/ctl/ncu_csv.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

KernelProfile kernel(double sm, double mem, double seconds = 10e-6) {
  KernelProfile k;
  k.name = "route(Args)";
  k.duration_seconds = seconds;
  k.sm_throughput_pct = sm;
  k.memory_throughput_pct = mem;
  k.waves_per_sm = 4;
  k.theoretical_occupancy_pct = 50;
  k.grid_threads = 131072;
  return k;
}

Bottleneck class_of(const KernelProfile& k) {
  return classify(CallProfile{{k}, std::nullopt}, std::nullopt, std::nullopt).bottleneck;
}

TEST(BottleneckState, EachClassFromItsMetrics) {
  EXPECT_EQ(class_of(kernel(20, 85)), Bottleneck::kMemoryBound);
  EXPECT_EQ(class_of(kernel(90, 30)), Bottleneck::kComputeBound);
  EXPECT_EQ(class_of(kernel(70, 75)), Bottleneck::kBalanced);
  EXPECT_EQ(class_of(kernel(10, 25)), Bottleneck::kLatencyBound);
  EXPECT_EQ(class_of(kernel(45, 55)), Bottleneck::kBalanced) << "busy-ish, nothing leads";

  KernelProfile spills = kernel(20, 85);
  spills.local_memory_bytes = 131072 * 64.0;
  EXPECT_EQ(class_of(spills), Bottleneck::kSpilling) << "a defect explains the throughputs";
  KernelProfile few = kernel(20, 85);
  few.waves_per_sm = 0.3;
  EXPECT_EQ(class_of(few), Bottleneck::kUnderfilledGrid);
  KernelProfile regs = kernel(10, 20);
  regs.theoretical_occupancy_pct = 12.5;
  regs.occupancy_limiter = "registers";
  EXPECT_EQ(class_of(regs), Bottleneck::kOccupancyRegisters);
  regs.occupancy_limiter = "shared_memory";
  EXPECT_EQ(class_of(regs), Bottleneck::kOccupancySharedMemory);
  regs.occupancy_limiter = "warps";
  EXPECT_EQ(class_of(regs), Bottleneck::kLatencyBound) << "a warp limit is not a resource limit";
  KernelProfile scattered = kernel(10, 30);
  scattered.sectors_per_request = 28;
  EXPECT_EQ(class_of(scattered), Bottleneck::kUncoalesced);
}

TEST(BottleneckState, LaunchBoundByTheEmptyKernelOrByGaps) {
  CallProfile tiny{{kernel(5, 5, 0.8e-6)}, 1.2e-6};
  EXPECT_EQ(classify(tiny, std::nullopt, 0.54e-6).bottleneck, Bottleneck::kLaunchBound);
  EXPECT_EQ(classify(tiny, std::nullopt, std::nullopt).bottleneck, Bottleneck::kLatencyBound)
      << "without the empty-kernel span the rule cannot apply";
  CallProfile gaps{{kernel(20, 85, 3e-6), kernel(20, 85, 2e-6)}, 10e-6};
  const BottleneckState s = classify(gaps, std::nullopt, 0.54e-6);
  EXPECT_EQ(s.bottleneck, Bottleneck::kLaunchBound);
  EXPECT_NE(s.evidence.find("50% of the 10.00 us span is between kernels"), std::string::npos)
      << s.evidence;
}

TEST(BottleneckState, DominantKernelShareHeadroomAndSignature) {
  KernelProfile main = kernel(20, 85, 15e-6), tail = kernel(5, 5, 5e-6);
  main.name = "split_kv_attention(AttentionArgs, SplitPartials, int)";
  tail.name = "merge_splits(AttentionArgs, SplitPartials, int)";
  const BottleneckState s = classify(CallProfile{{tail, main}, 20e-6}, 4e-6, 0.54e-6);
  EXPECT_EQ(s.dominant_kernel, "split_kv_attention");
  EXPECT_DOUBLE_EQ(s.dominant_share, 0.75);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_DOUBLE_EQ(*s.headroom, 5.0);
  EXPECT_EQ(s.signature(), "memory_bound@split_kv_attention");
  EXPECT_EQ(bottleneck_from_name("memory_bound", "here"), Bottleneck::kMemoryBound);
  EXPECT_THROW(bottleneck_from_name("slow", "here"), Error);
}

TEST(BottleneckState, RealCaptureWithoutThroughputsIsUnknownNotGuessed) {
  const auto launches = parse_ncu_csv(
      read_text_file(test::source_dir() / "tests/data/ncu/h200_dsa_attention_durations.csv"),
      "capture");
  // Workload 12 (8 tokens x 2048 rows): launches 6 and 7.
  const BottleneckState s =
      classify(CallProfile{{launches[6], launches[7]}, std::nullopt}, 4.45e-6, 0.544e-6);
  EXPECT_EQ(s.dominant_kernel, "split_kv_attention");
  EXPECT_EQ(s.bottleneck, Bottleneck::kUnknown);
  EXPECT_NEAR(*s.headroom, (11968 + 6784) * 1e-9 / 4.45e-6, 1e-9);
}

// Full-metric Nsight Compute captures of the library's kernels on one H200 (`ncu --clock-control
// none --metrics <kNcuMetrics> --csv kh eval ... --official -w A -w B`, the program's own output
// left in): each launch parses whole and lands in the class its numbers call for.
std::vector<KernelProfile> capture(const char* name) {
  return parse_ncu_csv(read_text_file(test::source_dir() / "tests/data/ncu" / name), name);
}

TEST(BottleneckState, RealFullMetricCapturesOfTheLibrary) {
  const auto dsa = capture("h200_dsa_attention_full_metrics.csv");
  ASSERT_EQ(dsa.size(), 2u);  // one token with 27 rows; 8 tokens x 2048 scattered rows
  for (const KernelProfile& k : dsa) {
    EXPECT_EQ(k.registers_per_thread, 188);
    EXPECT_NEAR(*k.dynamic_smem_bytes / 1024, 178.2, 0.1);
    EXPECT_EQ(k.occupancy_limiter, "shared_memory");
    EXPECT_EQ(k.local_memory_bytes, 0);
  }
  // 16 CTAs on 132 SMs, 10 us for almost no bytes: the grid, not memory, is the limit.
  const BottleneckState one = classify(CallProfile{{dsa[0]}, std::nullopt}, 0.017e-6, 0.54e-6);
  EXPECT_EQ(one.bottleneck, Bottleneck::kUnderfilledGrid) << one.evidence;
  EXPECT_EQ(one.dominant_kernel, "split_kv_attention");
  EXPECT_GT(*one.headroom, 100);
  const BottleneckState eight = classify(CallProfile{{dsa[1]}, std::nullopt}, 4.45e-6, 0.54e-6);
  EXPECT_EQ(eight.bottleneck, Bottleneck::kUnderfilledGrid) << eight.evidence;
  EXPECT_NEAR(*dsa[1].waves_per_sm, 0.55, 0.01);

  const auto gdn = capture("h200_gdn_decode_full_metrics.csv");
  ASSERT_EQ(gdn.size(), 2u);  // batch 1 and batch 64
  EXPECT_EQ(classify(CallProfile{{gdn[0]}, std::nullopt}, 1.81e-6, 0.54e-6).bottleneck,
            Bottleneck::kUnderfilledGrid);
  // Batch 64: two waves, half of DRAM's peak and little else busy.
  const BottleneckState b64 = classify(CallProfile{{gdn[1]}, std::nullopt}, 14.8e-6, 0.54e-6);
  EXPECT_NEAR(*gdn[1].dram_throughput_pct, 53, 2);
  EXPECT_EQ(b64.dominant_kernel, "void row_tiles_kernel<4, 4, 1>");
  EXPECT_NE(b64.bottleneck, Bottleneck::kUnderfilledGrid) << b64.evidence;
  EXPECT_NE(b64.bottleneck, Bottleneck::kUnknown) << b64.evidence;
}

}  // namespace
}  // namespace kh::ctl
