#include "kh/run/host_call_timer.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>

#include "kh/core/error.h"

namespace kh {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// The first "model name" of /proc/cpuinfo (x86; other architectures may not have one).
std::optional<std::string> cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return std::nullopt;
}

std::string entry_point_error(int rc, const std::string& why) {
  return fmt::format("the entry point returned status {}: {}", rc, why);
}

}  // namespace

Json host_environment_json() {
  Json e = {{"gpu", "cpu"}, {"backend", "cpu"}, {"host", host_name()}};
  if (auto model = cpu_model()) e["cpu_model"] = *model;
  return e;
}

bool is_cpu_environment(const Json& environment) {
  return environment.is_object() && environment.value("backend", "") == "cpu";
}

HostCallTimer::HostCallTimer() : environment_(host_environment_json()) {}

std::vector<TrialTiming> HostCallTimer::time_interleaved(TimingMethod method, int warmup,
                                                         const std::vector<Call>& calls,
                                                         const std::vector<int>& order) {
  if (method != TimingMethod::kWall)
    fail("timer: the {} method needs the cuda backend; the host timer times with wall",
         timing_method_name(method));
  if (calls.empty()) fail("timer: no call to time");
  if (warmup < 0) fail("timer: warmup {} is negative", warmup);
  for (int i : order)
    if (i < 0 || static_cast<std::size_t>(i) >= calls.size())
      fail("timer: order names call {} of {}", i, calls.size());

  auto failed = [&](const std::string& error) {
    return std::vector<TrialTiming>(calls.size(), TrialTiming{{}, error, {}});
  };
  // No L2 flush before the calls, untimed or timed: the host has none (see the header).
  for (const std::size_t c : warmup_order(calls.size(), order)) {
    for (int i = 0; i < kOfficialPreWarmupCalls + warmup; ++i) {
      std::string why;
      if (const int rc = calls[c](why)) return failed(entry_point_error(rc, why));
    }
  }
  std::vector<TrialTiming> results(calls.size());
  for (const int c : order) {
    std::string why;
    const auto start = std::chrono::steady_clock::now();
    const int rc = calls[static_cast<std::size_t>(c)](why);
    const auto end = std::chrono::steady_clock::now();
    if (rc) return failed(entry_point_error(rc, why));
    results[static_cast<std::size_t>(c)].samples.push_back(
        make_timing_sample(std::chrono::duration<double>(end - start).count(), 0, 0));
  }
  return results;
}

}  // namespace kh
