// The paired gate's measurement (label `gpu`; skipped without a device): two candidates loaded in
// one worker, timed interleaved on the same inputs. An A/A pair (the same library twice) gives
// each side its samples and latencies within a few percent of each other; the order is honoured.
#include <algorithm>

#include <gtest/gtest.h>

#include "kh/build/builder.h"
#include "kh/build/candidate.h"
#include "kh/run/evaluator.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

double median_seconds(const std::vector<TimingSample>& samples) {
  std::vector<double> s;
  for (const auto& x : samples) s.push_back(x.seconds);
  std::sort(s.begin(), s.end());
  return s.at(s.size() / 2);
}

TEST(GpuPairedTiming, AnAAPairIsTimedInterleavedOnTheSameInputs) {
  KH_REQUIRE_GPU();
  const std::string def_name = "gdn_decode_qk4_v8_d128_k_last";
  BuildOptions build_options;
  build_options.cache_dir = test::source_dir() / "build" / "test-build-cache";
  const Candidate c = load_candidate(test::source_dir() / "examples" / def_name);
  const BuildResult b = Builder(build_options).build(c, default_params(c));
  ASSERT_TRUE(b.ok) << b.log;

  test::ScopedTempDir logs;
  EvalOptions o;
  o.root = test::source_dir();
  o.backend = "cuda";
  o.log_dir = logs.path();
  o.kh_binary = KH_BINARY;  // the worker is kh, not this test binary
  Evaluator evaluator(o, b.library.string(), c.entry.symbol);
  evaluator.set_peer(b.library.string(), c.entry.symbol);
  const Dataset ds = Dataset::open(test::source_dir());
  const Definition& def = ds.definition(def_name);
  const Workload w = ds.workloads(def_name).at(40);

  constexpr int kPairs = 15;
  std::vector<int> order;
  for (int i = 0; i < kPairs; ++i) {
    order.push_back(i % 2);
    order.push_back(1 - i % 2);
  }
  const Evaluator::PairedTiming t = evaluator.time_pair(def, w, 0, TimingMethod::kCupti, 3, order);
  ASSERT_TRUE(t.error.empty()) << t.error;
  ASSERT_EQ(t.a.size(), static_cast<std::size_t>(kPairs));
  ASSERT_EQ(t.b.size(), static_cast<std::size_t>(kPairs));
  const double a = median_seconds(t.a), b_median = median_seconds(t.b);
  EXPECT_GT(a, 0);
  EXPECT_NEAR(b_median / a, 1.0, 0.10) << "A/A medians " << a << " and " << b_median;
  EXPECT_TRUE(t.cost.is_object());
  EXPECT_TRUE(t.environment.is_object());
}

}  // namespace
}  // namespace kh
