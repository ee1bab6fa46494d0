#include "test_support.h"

#include "kh/check/checker.h"
#include "kh/run/memory_backend.h"
#include "kh/spec/dataset.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "kh/core/minifloat.h"

#include "kh/core/error.h"
#include "kh/spec/dataset.h"

namespace kh::test {

std::filesystem::path source_dir() {
  return KH_SOURCE_DIR;
}
std::filesystem::path shared_dir() {
  return KH_SHARED_DIR;
}

Definition shipped_definition(const std::string& name) {
  for (const auto& file : find_files(source_dir() / "definitions", ".json"))
    if (file.stem() == name) return load_definition(file);
  fail("no shipped definition named {}", name);
}

ScopedTempDir::ScopedTempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("kh-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

AxisValues axes_with(const Definition& def, const AxisValues& vars) {
  AxisValues axes = vars;
  for (const auto& axis : def.axes)
    if (axis.is_const) axes[axis.name] = axis.value;
  return axes;
}

InputSet zero_inputs(const Definition& def, const AxisValues& axes) {
  InputSet inputs;
  for (const auto& decl : def.inputs)
    inputs.add(decl.name, HostTensor(decl.dtype, def.shape_of(decl, axes)));
  return inputs;
}

double bf16(double x) {
  return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
}

void expect_bf16_near(double actual, double exact, const std::string& what) {
  EXPECT_NEAR(actual, bf16(exact), std::abs(exact) * (1.0 / 256) + 1e-30) << what;
}

CommandResult run_command(const std::string& command) {
  ScopedTempDir dir;
  const auto err_file = dir.path() / "stderr";
  CommandResult r;
  FILE* p = popen((command + " 2>" + err_file.string()).c_str(), "r");
  if (!p) return r;
  char buf[65536];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(err_file);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

KhEval run_kh_eval(const std::string& args) { return run_kh_eval_on(source_dir(), args); }

KhEval run_kh_eval_on(const std::filesystem::path& root, const std::string& args, bool refused) {
  static const std::string cache = (source_dir() / "build" / "test-build-cache").string();
  static ScopedTempDir logs;
  KhEval e;
  // Each test binary records into its own store, without the project's memory bundles.
  e.run = run_command("KH_MEMORY_DIR= " + std::string(KH_BINARY) + " eval --json --root " +
                      root.string() + " --cache " + cache + " --logs " + logs.path().string() +
                      " --store " + (logs.path() / "store").string() + " " + args);
  if (refused) {
    EXPECT_EQ(e.run.status, 1) << e.run.out;
    return e;
  }
  try {
    e.report = parse_json(e.run.out, "kh eval output");
  } catch (...) {
    ADD_FAILURE() << "kh eval " << args << " printed no JSON (exit " << e.run.status
                  << "); stderr: " << e.run.err << "\nstdout: " << e.run.out;
  }
  return e;
}

std::pair<std::string, std::size_t> official_workload_args(const std::string& def) {
  const Dataset ds = Dataset::open(source_dir());
  const char* stride_env = std::getenv("KH_GPU_TEST_STRIDE");
  const std::size_t stride = stride_env ? std::max(1, std::atoi(stride_env)) : 1;
  std::string args;
  std::size_t n = 0, index = 0;
  for (const auto& w : ds.workloads(def)) {
    if (index++ % stride) continue;
    args += " -w " + w.uuid;
    ++n;
  }
  return {args, n};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no kh::Error thrown";
  return "";
}

std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

bool have_gpu() {
  try {
    make_cuda_backend(0);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

CheckOptions reference_grade(const Definition& def) {
  CheckOptions o = official_options(def, false);
  o.tolerance = {1e-3, 1.0 / 128, 0.999};
  return o;
}

}  // namespace kh::test
