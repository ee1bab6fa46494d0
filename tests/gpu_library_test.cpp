// Every operator of the kernel library as the harness sees it (label `gpu`; skipped without a
// device): kernels/<op>/ built as a candidate passes its definition's official workloads (every
// k-th with KH_GPU_TEST_STRIDE=k), the extra shapes of tests/data/extra_shapes/<definition>.jsonl
// under the ordinary inputs and every adversarial variant of the definition's generator, and is
// timed by CUDA-graph replay (a call that synchronises or allocates cannot be captured).
// Promotion evidence runs the same checks at 100 trials (kh promote's replay).
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kh/build/candidate.h"
#include "kh/gen/input_generator.h"
#include "kh/spec/dataset.h"
#include "test_support.h"

namespace kh {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> library_operators() {
  std::vector<std::string> ops;
  for (const auto& entry : fs::directory_iterator(test::source_dir() / "kernels"))
    if (fs::exists(entry.path() / kCandidateManifest)) ops.push_back(entry.path().filename());
  std::sort(ops.begin(), ops.end());
  return ops;
}

class LibraryOperator : public ::testing::TestWithParam<std::string> {
 protected:
  std::string folder() const { return (test::source_dir() / "kernels" / GetParam()).string(); }
  std::string definition() const { return load_candidate(folder()).definition; }
  test::KhEval eval(const std::string& args) const {
    return test::run_kh_eval("--backend cuda " + folder() + " " + args);
  }
};

TEST_P(LibraryOperator, PassesTheOfficialWorkloads) {
  KH_REQUIRE_GPU();
  const auto [args, n] = test::official_workload_args(definition());
  const test::KhEval e = eval("--trials 1" + args);
  EXPECT_EQ(e.run.status, 0) << e.run.out.substr(0, 4000);
  EXPECT_EQ(e.report.value("passed", 0u), n);
}

TEST_P(LibraryOperator, PassesTheExtraShapesUnderEveryVariant) {
  KH_REQUIRE_GPU();
  const fs::path extra = test::source_dir() / "tests/data/extra_shapes" / (definition() + ".jsonl");
  ASSERT_TRUE(fs::exists(extra)) << "every library operator has extra shapes: " << extra;
  const std::size_t n = load_workload_file(extra).size();
  std::vector<std::string> variants = {""};
  for (const auto& v : InputGenerator::variants(test::shipped_definition(definition())))
    variants.push_back(v.name);
  for (const auto& variant : variants) {
    SCOPED_TRACE("variant '" + variant + "'");
    const test::KhEval e = eval("--trials 2 --workloads " + extra.string() +
                                (variant.empty() ? "" : " --variant " + variant));
    EXPECT_EQ(e.run.status, 0) << e.run.out.substr(0, 4000);
    // A variant that cannot be drawn for a shape (zero_length needs two sequences) skips it, and
    // says so; every other shape must pass.
    const std::size_t skipped = e.report.contains("skipped") ? e.report.at("skipped").size() : 0;
    EXPECT_EQ(e.report.value("failed", 0u), 0u);
    EXPECT_EQ(e.report.value("passed", 0u) + skipped, n);
    EXPECT_LT(skipped, n) << "the variant skipped every extra shape";
  }
}

TEST_P(LibraryOperator, IsCapturedInACudaGraph) {
  KH_REQUIRE_GPU();
  const test::KhEval e =
      eval("-w 0 --trials 1 --timing graph --warmup 1 --iterations 3 --timing-trials 1");
  ASSERT_EQ(e.status(), "PASSED") << e.run.out.substr(0, 4000);
  EXPECT_GT(e.result().at("timing").at("latency_seconds").get<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Kernels, LibraryOperator, ::testing::ValuesIn(library_operators()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kh
