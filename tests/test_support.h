// Helpers shared by the tests: paths to the repository and ../shared, temporary folders, and
// loading the shipped definitions.
#pragma once

#include <filesystem>
#include <string>

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

/// Writes text to a file (creating folders) and returns its path.
std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace kh::test
