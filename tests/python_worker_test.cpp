// The Python worker on the cpu backend (numpy arrays, no torch): Python candidates run through
// the same protocol, buffers and checks as built libraries; a user's own definition is judged by
// its own `reference` code; every planted fault gets the verdict FlashInfer-Bench would give.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "test_support.h"

namespace kh {
namespace {

using ::testing::HasSubstr;

// kh eval on the user dataset (tests/data/user_dataset), whose definition has no native reference.
test::KhEval eval_user(const std::string& args, bool refused = false) {
  return test::run_kh_eval_on(test::source_dir() / "tests" / "data" / "user_dataset", args,
                              refused);
}

std::string candidate(const std::string& name) {
  return (test::source_dir() / "tests" / "candidates" / name).string();
}

std::string axpy_fault(const std::string& fault) {
  return candidate("python_axpy") + " --param FAULT=" + fault;
}

TEST(PythonWorker, UserDefinitionIsJudgedByItsOwnReference) {
  const test::KhEval dps = eval_user(candidate("python_axpy_dps"));
  EXPECT_EQ(dps.run.status, 0) << dps.run.out << dps.run.err;
  EXPECT_EQ(dps.report.value("passed", 0u), 3u);
  EXPECT_EQ(dps.report.value("reference", ""), "python");
  const test::KhEval value_returning = eval_user(axpy_fault("none"));
  EXPECT_EQ(value_returning.run.status, 0) << value_returning.run.out;
  EXPECT_EQ(value_returning.report.value("passed", 0u), 3u);
}

TEST(PythonWorker, ExceptionIsARuntimeErrorWithItsTraceback) {
  const test::KhEval e = eval_user(axpy_fault("raise") + " -w 1");
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("Traceback"));
  EXPECT_THAT(e.message(), HasSubstr("planted failure in the candidate"));
}

TEST(PythonWorker, AnOverlongMessageKeepsItsEnd) {
  const test::KhEval e = eval_user(axpy_fault("raise_long") + " -w 1");
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("planted failure at the end"));
}

TEST(PythonWorker, WrongShapeDtypeAndCountAreReportedAsSuch) {
  EXPECT_EQ(eval_user(axpy_fault("wrong_shape") + " -w 1").status(), "INCORRECT_SHAPE");
  EXPECT_EQ(eval_user(axpy_fault("wrong_dtype") + " -w 1").status(), "INCORRECT_DTYPE");
  const test::KhEval count = eval_user(axpy_fault("wrong_count") + " -w 1");
  EXPECT_EQ(count.status(), "RUNTIME_ERROR");
  EXPECT_THAT(count.message(), HasSubstr("returned 2 outputs"));
}

TEST(PythonWorker, WritingIntoAnInputIsCaught) {
  const test::KhEval e = eval_user(axpy_fault("write_input") + " -w 1");
  EXPECT_EQ(e.status(), "RUNTIME_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("modified input 'y'"));
}

TEST(PythonWorker, CachedOutputsAreCaughtByTheAntiCachingCall) {
  const test::KhEval e = eval_user(axpy_fault("cache_outputs") + " -w 1");
  EXPECT_EQ(e.status(), "INCORRECT_NUMERICAL");
  EXPECT_THAT(e.message(), HasSubstr("anti-caching"));
}

TEST(PythonWorker, TimedCallsOfAValueReturningEntryWork) {
  const test::KhEval e = eval_user(axpy_fault("none") +
                                   " -w 2 --timing wall --timing-trials 2 --iterations 3");
  ASSERT_EQ(e.status(), "PASSED") << e.run.out;
  EXPECT_GT(e.result().at("timing").at("latency_seconds").get<double>(), 0);
}

TEST(PythonWorker, PythonCandidateOfAShippedDefinitionIsJudgedByTheNativeReference) {
  // bf16 arrives as raw uint16 in numpy; the candidate converts it (and back) itself.
  const test::KhEval e = test::run_kh_eval(candidate("python_gdn_decode") + " -w 0 -w 3");
  EXPECT_EQ(e.run.status, 0) << e.run.out << e.run.err;
  EXPECT_EQ(e.report.value("passed", 0u), 2u);
  EXPECT_EQ(e.report.value("reference", ""), "auto");
}

TEST(PythonWorker, NativeOracleIsRefusedForADefinitionWithoutOne) {
  const test::KhEval e = eval_user(candidate("python_axpy_dps") + " --oracle native", true);
  EXPECT_NE(e.run.status, 0);
  EXPECT_THAT(e.run.err, HasSubstr("no native reference for user_axpy_f32"));
}

TEST(PythonWorker, ManifestErrorsNameTheField) {
  test::ScopedTempDir dir;
  test::write_file(dir.path() / "f.py", "def run(x, y, alpha):\n    return x\n");
  test::write_file(dir.path() / "candidate.toml",
                   "[solution]\nname='c'\ndefinition='user_axpy_f32'\nauthor='t'\n[build]\n"
                   "language='python'\nsources=['f.py']\nentry='f.py::run'\nflags=['-O3']\n");
  const test::KhEval flags = eval_user(dir.path().string(), true);
  EXPECT_THAT(flags.run.err, HasSubstr("build.flags"));
  test::write_file(dir.path() / "candidate.toml",
                   "[solution]\nname='c'\ndefinition='user_axpy_f32'\nauthor='t'\n[build]\n"
                   "language='python'\nsources=['f.py']\nentry='f.py::run'\n"
                   "destination_passing_style='no'\n");
  const test::KhEval dps = eval_user(dir.path().string(), true);
  EXPECT_THAT(dps.run.err, HasSubstr("build.destination_passing_style"));
}

TEST(PythonWorker, ImportErrorIsACompileErrorWithTheTraceback) {
  test::ScopedTempDir dir;
  test::write_file(dir.path() / "broken.py", "import no_such_module_kh\n");
  test::write_file(dir.path() / "candidate.toml",
                   "[solution]\nname='broken'\ndefinition='user_axpy_f32'\nauthor='t'\n[build]\n"
                   "language='python'\nsources=['broken.py']\nentry='broken.py::run'\n");
  const test::KhEval e = eval_user(dir.path().string() + " -w 0");
  EXPECT_EQ(e.status(), "COMPILE_ERROR");
  EXPECT_THAT(e.message(), HasSubstr("no_such_module_kh"));
}

}  // namespace
}  // namespace kh
