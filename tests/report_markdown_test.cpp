// The Markdown report: two candidates on a few fake workloads give the regime table and one row
// per workload with the right speedups; the plots are drawn when gnuplot is installed, and without
// it the report is still written and says so in one line.
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "kh/report/markdown_report.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Workload workload(const std::string& uuid, std::int64_t batch) {
  Workload w;
  w.uuid = uuid;
  w.axes = {{"batch", batch}};
  return w;
}

WorkloadResult timed(const std::string& uuid, double us) {
  return {uuid, "PASSED", us * 1e-6, std::nullopt, false};
}

// Regimes: 0 batch 1-3 {w0, w1}, 1 batch 4-15 {w2}, 2 batch 16-63 {w3}.
// Speedups base/fast: w0 2, w1 0.5, w2 4; w3 failed on the baseline.
ReportInput fake_input() {
  ReportInput in;
  in.definition = "toy_def";
  in.workloads = {workload("00000000-aaaa", 1), workload("11111111-bbbb", 2),
                  workload("22222222-cccc", 8), workload("33333333-dddd", 40)};
  Definition def;
  def.name = "toy_def";
  def.axes = {{"batch", false, 0, ""}};
  in.partition = partition_regimes(def, in.workloads);
  in.candidates = {{"base",
                    "0123456789abcdef0123",
                    {timed("00000000-aaaa", 10),
                     timed("11111111-bbbb", 20),
                     timed("22222222-cccc", 40),
                     {"33333333-dddd", "RUNTIME_ERROR", std::nullopt, std::nullopt, false}}},
                   {"fast",
                    "fedcba9876543210fedc",
                    {timed("00000000-aaaa", 5), timed("11111111-bbbb", 40),
                     timed("22222222-cccc", 10), timed("33333333-dddd", 8)}}};
  in.candidates[1].workloads[2].flaky = true;
  in.floor_seconds = {{"00000000-aaaa", 2e-6}};
  in.date = "2026-01-01 00:00 UTC";
  return in;
}

std::string read_report(const std::filesystem::path& dir) {
  return read_text_file(dir / "report.md");
}

TEST(MarkdownReport, HeaderSummaryAndRegimes) {
  test::ScopedTempDir dir;
  ReportInput in = fake_input();
  in.gnuplot = "gnuplot-definitely-missing";
  write_report(in, dir.path());
  const std::string md = read_report(dir.path());
  EXPECT_THAT(md, HasSubstr("# kh report: toy_def"));
  EXPECT_THAT(md, HasSubstr("2026-01-01 00:00 UTC"));
  EXPECT_THAT(md, HasSubstr("**base** `0123456789ab` (baseline"));
  EXPECT_THAT(md, HasSubstr("**fast** `fedcba987654`"));
  // Summary: the baseline passed 3 of 4; fast is (2 * 0.5 * 4)^(1/3) = 1.59x faster over 3;
  // its geomean latency is (5 * 40 * 10 * 8)^(1/4) = 11.2 us.
  EXPECT_THAT(md,
              HasSubstr("| base | 3/4 | 1 | 3 | 0 | 70.0 | 20.0 | 20.0 | 20.0% | (baseline) |"));
  EXPECT_THAT(md, HasSubstr("| fast | 4/4 | 0 | 4 | 1 | 63.0 | 11.2 | 9.00 | 40.0% | "
                            "1.59× (n=3, 0.50–4.00×) | 0 / 1 |"));
  // Regimes: base's shares 30/70 and 40/70; fast's 45/63, 10/63, 8/63.
  EXPECT_THAT(md, HasSubstr("| # | regime | workloads | base share | fast share | fast vs base |"));
  EXPECT_THAT(md, HasSubstr("| 0 | batch 1-3 | 2 | 42.9% | 71.4% | 1.00× (n=2, 0.50–2.00×) |"));
  EXPECT_THAT(md, HasSubstr("| 1 | batch 4-15 | 1 | 57.1% | 15.9% | 4.00× (n=1) |"));
  EXPECT_THAT(md, HasSubstr("| 2 | batch 16-63 | 1 | — | 12.7% | — (n=0) |"));
  EXPECT_THAT(md, HasSubstr("| **all** | 4 | 100% (3 timed) | 100% (4 timed) | 1.59× (n=3"));
}

TEST(MarkdownReport, OneRowPerWorkloadWithSpeedups) {
  test::ScopedTempDir dir;
  ReportInput in = fake_input();
  in.gnuplot = "gnuplot-definitely-missing";
  write_report(in, dir.path());
  const std::string md = read_report(dir.path());
  EXPECT_THAT(md,
              HasSubstr("| # | workload | regime | axes | floor (µs) | base (µs) | base of floor "
                        "| fast (µs) | fast of floor | fast vs base |"));
  // w0 has a floor of 2 us: 2/10 and 2/5 of it reached.
  EXPECT_THAT(md, HasSubstr("| 0 | `00000000` | 0 | batch=1 | 2.00 | 10.0 | 20.0% | 5.00 | 40.0% | "
                            "2.00× |"));
  EXPECT_THAT(md, HasSubstr("| 1 | `11111111` | 0 | batch=2 | — | 20.0 | — | 40.0 | — | 0.50× |"));
  EXPECT_THAT(md, HasSubstr("| 2 | `22222222` | 1 | batch=8 | — | 40.0 | — | 10.0 (flaky) | — | "
                            "4.00× |"));
  EXPECT_THAT(md, HasSubstr("| 3 | `33333333` | 2 | batch=40 | — | RUNTIME_ERROR | — | 8.00 | — | "
                            "— |"));
}

TEST(MarkdownReport, WithoutGnuplotTheReportSaysSoInOneLine) {
  test::ScopedTempDir dir;
  ReportInput in = fake_input();
  in.gnuplot = "gnuplot-definitely-missing";
  write_report(in, dir.path());
  const std::string md = read_report(dir.path());
  EXPECT_THAT(md, HasSubstr("## Plots\n\n_plots not drawn: gnuplot ('gnuplot-definitely-missing') "
                            "was not found in PATH"));
  EXPECT_THAT(md, Not(HasSubstr("![")));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "latency.png"));
  EXPECT_THAT(md, HasSubstr("## Workloads"));  // everything after the plots is still there
}

TEST(MarkdownReport, PlotsAreDrawnWhenGnuplotIsInstalled) {
  if (!find_program(kDefaultGnuplot))
    GTEST_SKIP() << "gnuplot is not installed (Debian package gnuplot-nox)";
  test::ScopedTempDir dir;
  write_report(fake_input(), dir.path());
  const std::string md = read_report(dir.path());
  for (const char* png : {"latency.png", "speedup.png"}) {
    SCOPED_TRACE(png);
    ASSERT_TRUE(std::filesystem::exists(dir.path() / png)) << md;
    EXPECT_GT(std::filesystem::file_size(dir.path() / png), 0u);
    EXPECT_THAT(md, HasSubstr(fmt::format("![{0}]({0})", png)));
  }
  EXPECT_THAT(md, Not(HasSubstr("plots not drawn")));
  // PNG signature: gnuplot wrote images, not error text.
  std::ifstream f(dir.path() / "latency.png", std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

TEST(MarkdownReport, OneCandidateHasNoSpeedupPlotOrColumns) {
  if (!find_program(kDefaultGnuplot))
    GTEST_SKIP() << "gnuplot is not installed (Debian package gnuplot-nox)";
  test::ScopedTempDir dir;
  ReportInput in = fake_input();
  in.candidates.resize(1);
  in.floor_seconds.clear();
  write_report(in, dir.path());
  const std::string md = read_report(dir.path());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "latency.png"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "speedup.png"));
  EXPECT_THAT(md, Not(HasSubstr(" vs ")));
  EXPECT_THAT(md, Not(HasSubstr("floor")));
  EXPECT_THAT(md, HasSubstr("| 3 | `33333333` | 2 | batch=40 | RUNTIME_ERROR |"));
}

TEST(MarkdownReport, NoCandidatesIsAnError) {
  test::ScopedTempDir dir;
  ReportInput in = fake_input();
  in.candidates.clear();
  try {
    write_report(in, dir.path());
    FAIL() << "a report without candidates must be rejected";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("toy_def"));
  }
}

}  // namespace
}  // namespace kh
