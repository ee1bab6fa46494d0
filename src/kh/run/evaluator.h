// Evaluates one built candidate on workloads: one worker process at a time, restarted after any
// crash or timeout, trials folded into one verdict per workload as FlashInfer-Bench folds them
// (a shape/dtype/non-finite/runtime failure ends the workload; tolerance failures accumulate).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kh/check/check_result.h"
#include "kh/gpu/sample_stats.h"
#include "kh/gpu/timing_config.h"
#include "kh/run/worker_client.h"
#include "kh/spec/definition.h"
#include "kh/spec/workload.h"

namespace kh {

struct EvalOptions {
  std::filesystem::path root = ".";  // dataset
  std::uint64_t seed = 20260501;
  std::string variant;
  int trials = 3;
  bool official = false;
  std::string backend = "cpu";
  int device = 0;
  bool sanitize = false;
  bool cpu_reference = false;  // TrialOptions::cpu_reference
  // Timing of workloads that passed (cupti, events or graph on the cuda backend, wall on the cpu
  // backend: check_timing_backend): the method, and counts overriding the official ones of the
  // definition (official_timing_config) when set.
  std::optional<TimingMethod> timing;
  std::optional<TimingConfig> timing_config;
  std::chrono::milliseconds call_timeout{10'000};
  std::chrono::milliseconds workload_timeout{300'000};
  std::chrono::milliseconds start_timeout{30'000};
  std::filesystem::path log_dir = ".kh/logs";
  std::string kh_binary;  // the worker executable (kh itself); empty: /proc/self/exe
  // Who judges the outputs: "native" (kh's CPU/GPU references), "python" (the definition's own
  // PyTorch reference, in the Python worker) or "auto" (native where kh has one).
  std::string oracle = "auto";
};

/// The Python worker's interpreter: $KH_PYTHON, else python3 (on PATH).
std::string python_interpreter();
/// Whether trials of `def` under `oracle` ("auto" | "native" | "python") are judged by the
/// definition's PyTorch reference; an error for another oracle name or "native" without one.
bool uses_python_oracle(const std::string& oracle, const Definition& def);

struct WorkloadVerdict {
  std::string workload;
  CheckResult check;
  int trials_run = 0;
  bool nondeterministic = false;  // some trial gave different bits for the same inputs
  std::string log_tail;           // RUNTIME_ERROR / TIMEOUT: the end of the worker's log
  double seconds = 0;
  // Correctness trials' time by phase, summed over the trials (trial_runner.h TrialPhases:
  // "inputs", "reference", "calls", "checks"), and "worker" for the rest: requests, replies,
  // the worker's own setup per trial.
  std::map<std::string, double> trial_phase_seconds;
  std::optional<TimingResult> timing;  // when timing was asked for and the workload passed
  Json cost;                           // the call's roofline cost (trial 0), or null
  Json environment;                    // the timing worker's device (or host), or null
};

class Evaluator {
 public:
  Evaluator(EvalOptions options, std::string library, std::string entry);
  ~Evaluator();

  WorkloadVerdict evaluate(const Definition& def, const Workload& workload);

  /// A paired gate's second candidate, loaded into the same worker beside the first.
  void set_peer(std::string library, std::string entry);
  /// One round of a paired gate on one workload: the candidate (a) and its peer (b) on the same
  /// inputs (those of `trial`), timed interleaved in `order` (0: a, 1: b). A worker crash, a
  /// load failure or a timer failure comes back in `error` (the worker is restarted next time).
  struct PairedTiming {
    std::vector<TimingSample> a, b;
    std::string error;
    Json environment;
    Json cost;
  };
  PairedTiming time_pair(const Definition& def, const Workload& workload, int trial,
                         TimingMethod method, int warmup, const std::vector<int>& order);

 private:
  /// Starts (or restarts) the worker and loads the candidate; returns a failure verdict's check
  /// if the library does not load (COMPILE_ERROR) or the worker does not start (RUNTIME_ERROR).
  std::optional<CheckResult> ensure_worker(const Definition& def);
  /// The worker's argv: `kh worker`, or the Python worker when a candidate or the oracle is
  /// Python; under compute-sanitizer with --sanitize.
  std::vector<std::string> worker_command(const Definition& def);
  /// A Python candidate (or peer), or the Python oracle, needs the Python worker.
  bool needs_python_worker(const Definition& def) const;
  /// --sanitize: ends the worker so compute-sanitizer writes its summary, and turns reported
  /// errors into RUNTIME_ERROR with the report attached.
  void apply_sanitizer_report(WorkloadVerdict& v);
  /// The fields every trial and time request carries (worker_protocol.h).
  Json workload_request(const char* op, const Definition& def, const Workload& workload,
                        int trial) const;
  /// Times a passed workload; a timer failure makes it a RUNTIME_ERROR, as officially.
  void time_workload(const Definition& def, const Workload& workload, WorkloadVerdict& v);

  EvalOptions options_;
  std::string library_;
  std::string entry_;
  std::string peer_library_, peer_entry_;  // empty: no peer
  std::unique_ptr<WorkerClient> worker_;
  int workers_started_ = 0;
  std::filesystem::path sanitizer_log_;
};

}  // namespace kh
