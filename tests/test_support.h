// Helpers shared by the tests: paths to the repository and ../shared, temporary folders, and
// loading the shipped definitions.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "kh/check/check_result.h"
#include "kh/core/json_io.h"
#include "kh/gen/input_set.h"
#include "kh/spec/definition.h"

namespace kh::test {

std::filesystem::path source_dir();  // repository root
std::filesystem::path shared_dir();  // ../shared beside the repository

/// Loads a shipped definition by name from definitions/<op_type>/<name>.json.
Definition shipped_definition(const std::string& name);

/// A fresh empty directory under the system temp dir, removed when the object dies.
class ScopedTempDir {
 public:
  ScopedTempDir();
  ~ScopedTempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The workload's var axis values plus the definition's const axes.
AxisValues axes_with(const Definition& def, const AxisValues& vars);
/// Zero-filled inputs of the definition's shapes and dtypes (every optional input present).
InputSet zero_inputs(const Definition& def, const AxisValues& axes);
/// x rounded to bfloat16 (to nearest even), as a double.
double bf16(double x);
/// Expects `actual` within half a bf16 ulp of bf16(exact) (allows a double-rounding tie flip).
void expect_bf16_near(double actual, double exact, const std::string& what);

/// A shell command's exit status and what it wrote to stdout and stderr.
struct CommandResult {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out;
  std::string err;
};
CommandResult run_command(const std::string& command);

/// `kh eval --json` on the repository's dataset, with a build cache shared by all tests
/// (build/test-build-cache) and worker logs in a temporary folder.
struct KhEval {
  CommandResult run;
  Json report;  // null if kh printed no JSON (the test has then already failed)
  const Json& result(std::size_t i = 0) const { return report.at("results").at(i); }
  std::string status(std::size_t i = 0) const { return result(i).at("status").get<std::string>(); }
  std::string message(std::size_t i = 0) const {
    return result(i).at("message").get<std::string>();
  }
};
KhEval run_kh_eval(const std::string& args);
/// The same on another dataset folder; with `refused`, kh is expected to stop with an error
/// (exit 1) instead of printing a report.
KhEval run_kh_eval_on(const std::filesystem::path& root, const std::string& args,
                      bool refused = false);

/// " -w UUID" for every official workload of `def` (every k-th with KH_GPU_TEST_STRIDE=k, for
/// short device sessions), and how many were picked.
std::pair<std::string, std::size_t> official_workload_args(const std::string& def);

/// Whether a CUDA device is usable (a cuda backend can be made on device 0).
bool have_gpu();
/// GPU tests start with this: without a device they are reported as skipped (label `gpu`).
#define KH_REQUIRE_GPU() \
  if (!::kh::test::have_gpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped"

/// Two references must agree far more closely than a candidate must match one: the official MoE
/// tolerance (rtol 0.3, 90% matched) would not see a wrong block scale. Two bf16 ulps, with room
/// for the rare element where float and double accumulation part after cancellation.
CheckOptions reference_grade(const Definition& def);

/// The message of the kh::Error that `f` throws; records a test failure (and returns "") when it
/// throws none.
std::string error_of(const std::function<void()>& f);

/// Writes text to a file (creating folders) and returns its path.
std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace kh::test
