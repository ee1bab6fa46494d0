#include "kh/run/evaluator.h"

#include <unistd.h>

#include <cstdlib>

#include "kh/build/builder.h"
#include "kh/build/kh_home.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "kh/ref/cpu_reference.h"
#include "kh/run/builtin_candidates.h"
#include "kh/run/worker_protocol.h"

namespace kh {
namespace {

CheckResult failure(EvalStatus status, std::string message) {
  CheckResult r;
  r.status = status;
  r.matched_ratio = 0;
  r.message = std::move(message);
  r.terminal = true;
  return r;
}

// compute-sanitizer writes "========= ERROR SUMMARY: N errors" when the process ends.
bool sanitizer_found_errors(const std::string& log) {
  const auto at = log.find("ERROR SUMMARY: ");
  if (at == std::string::npos) return log.find("========= Invalid") != std::string::npos;
  return log.compare(at + 15, 2, "0 ") != 0;
}

bool is_python_side(const std::string& library) {
  return is_python_candidate_library(library) || library == kDefinitionReferenceBuiltin;
}

// libkh_worker.so: $KH_WORKER_LIBRARY, else beside the kh executable (both are build outputs).
std::filesystem::path worker_library(const std::string& kh_binary) {
  if (const char* env = std::getenv("KH_WORKER_LIBRARY")) return env;
  return std::filesystem::path(kh_binary).parent_path() / "libkh_worker.so";
}

// The worker's phases of one trial, and the rest of its round trip as "worker".
void add_trial_phases(WorkloadVerdict& v, const WorkerReply& r,
                      std::chrono::steady_clock::duration round_trip) {
  double measured = 0;
  if (r.kind == WorkerReply::Kind::kReply && r.body.contains("phases") &&
      r.body["phases"].is_object())
    for (const auto& [phase, seconds] : r.body["phases"].items())
      if (seconds.is_number()) {
        v.trial_phase_seconds[phase] += seconds.get<double>();
        measured += seconds.get<double>();
      }
  v.trial_phase_seconds["worker"] +=
      std::max(0.0, std::chrono::duration<double>(round_trip).count() - measured);
}

}  // namespace

std::string python_interpreter() {
  const char* env = std::getenv("KH_PYTHON");
  return env && *env ? env : "python3";
}

bool uses_python_oracle(const std::string& oracle, const Definition& def) {
  const bool native = find_cpu_reference(def.name) != nullptr;
  if (oracle == "python") return true;
  if (oracle == "native") {
    if (!native)
      fail("--oracle native: kh has no native reference for {}; use --oracle python (its "
           "PyTorch reference)",
           def.name);
    return false;
  }
  if (oracle != "auto") fail("--oracle: expected auto, native or python, got \"{}\"", oracle);
  return !native;
}

bool Evaluator::needs_python_worker(const Definition& def) const {
  return uses_python_oracle(options_.oracle, def) || is_python_side(library_) ||
         is_python_side(peer_library_);
}

std::vector<std::string> Evaluator::worker_command(const Definition& def) {
  std::vector<std::string> command;
  if (options_.sanitize) {
    sanitizer_log_ =
        options_.log_dir / fmt::format("sanitizer-{}-{}.log", getpid(), workers_started_);
    // --padding: allocations get unaddressable padding, so a read just past a buffer is seen.
    command = {"compute-sanitizer",    "--tool", "memcheck", "--padding", "64", "--log-file",
               sanitizer_log_.string()};
  }
  if (needs_python_worker(def)) {
    const auto script = kh_home() / "python" / "kh_worker.py";
    const auto runtime = worker_library(options_.kh_binary);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(runtime, ec))
      fail("{}: the Python worker's library is missing (build the kh_worker target, or set "
           "KH_WORKER_LIBRARY)",
           runtime.string());
    // -u: what a candidate prints reaches the log even if the worker dies.
    command.insert(command.end(), {python_interpreter(), "-u", script.string(), "--backend",
                                   options_.backend, "--device", std::to_string(options_.device),
                                   "--runtime", runtime.string()});
  } else {
    command.insert(command.end(), {options_.kh_binary, "worker", "--backend", options_.backend,
                                   "--device", std::to_string(options_.device)});
  }
  return command;
}

void Evaluator::apply_sanitizer_report(WorkloadVerdict& v) {
  // The summary is written when the worker exits: end it after every workload under sanitizer.
  if (worker_) worker_->stop();
  worker_.reset();
  std::string report;
  try {
    report = read_text_file(sanitizer_log_);
  } catch (const Error&) {
    return;  // no log: the sanitizer did not run (its absence shows as a worker start failure)
  }
  if (!sanitizer_found_errors(report)) return;
  if (report.size() > 8000) report = report.substr(0, 8000) + "\n[report truncated]";
  v.check.status = EvalStatus::kRuntimeError;
  v.check.terminal = true;
  v.check.matched_ratio = 0;
  v.check.message = "compute-sanitizer memcheck reported errors:\n" + report;
}

Evaluator::Evaluator(EvalOptions options, std::string library, std::string entry)
    : options_(std::move(options)), library_(std::move(library)), entry_(std::move(entry)) {
  if (options_.kh_binary.empty()) options_.kh_binary = self_executable();
}

Evaluator::~Evaluator() {
  if (worker_) worker_->stop();
}

std::optional<CheckResult> Evaluator::ensure_worker(const Definition& def) {
  if (worker_ && worker_->running()) return std::nullopt;
  const std::vector<std::string> command = worker_command(def);
  // A Python load imports the candidate (and maybe compiles what it builds at import) or the
  // definition's reference: it gets the workload's time, not the start's.
  const auto load_timeout =
      needs_python_worker(def) ? options_.workload_timeout : options_.start_timeout;
  const auto log = options_.log_dir / fmt::format("worker-{}-{}.log", getpid(), workers_started_++);
  worker_ = std::make_unique<WorkerClient>(command, log);
  try {
    worker_->start(options_.start_timeout);
  } catch (const Error& e) {
    worker_.reset();
    return failure(EvalStatus::kRuntimeError, e.what());
  }
  const WorkerReply r = worker_->request(
      {{"op", "load"}, {"library", library_}, {"entry", entry_}, {"root", options_.root.string()}},
      load_timeout, load_timeout);
  if (r.kind != WorkerReply::Kind::kReply) {
    const std::string tail = worker_->log_tail();
    worker_.reset();
    return failure(EvalStatus::kRuntimeError, "loading the candidate: " + r.detail + "\n" + tail);
  }
  if (!r.body.value("ok", false)) {
    const std::string error = r.body.value("error", "");
    worker_->stop();
    worker_.reset();
    // FlashInfer-Bench: an unresolved symbol at dlopen is a COMPILE_ERROR.
    return failure(EvalStatus::kCompileError, error);
  }
  if (!peer_library_.empty()) {
    const WorkerReply p = worker_->request({{"op", "load"},
                                            {"slot", "peer"},
                                            {"library", peer_library_},
                                            {"entry", peer_entry_},
                                            {"root", options_.root.string()}},
                                           load_timeout, load_timeout);
    if (p.kind != WorkerReply::Kind::kReply || !p.body.value("ok", false)) {
      const std::string why = p.kind != WorkerReply::Kind::kReply
                                  ? p.detail + "\n" + worker_->log_tail()
                                  : p.body.value("error", "");
      worker_->stop();
      worker_.reset();
      return failure(EvalStatus::kCompileError, "loading the peer candidate: " + why);
    }
  }
  if (uses_python_oracle(options_.oracle, def)) {
    // The definition's PyTorch reference judges the trials; it failing is kh's error (or the
    // definition's), not the candidate's.
    const WorkerReply o = worker_->request({{"op", "load"},
                                            {"slot", "oracle"},
                                            {"definition", def.name},
                                            {"root", options_.root.string()}},
                                           load_timeout, load_timeout);
    if (o.kind != WorkerReply::Kind::kReply || !o.body.value("ok", false)) {
      const std::string why = o.kind != WorkerReply::Kind::kReply
                                  ? o.detail + "\n" + worker_->log_tail()
                                  : o.body.value("error", "");
      worker_->stop();
      worker_.reset();
      fail("loading the PyTorch reference of {} as the oracle: {}", def.name, why);
    }
  }
  return std::nullopt;
}

void Evaluator::set_peer(std::string library, std::string entry) {
  peer_library_ = std::move(library);
  peer_entry_ = std::move(entry);
  if (worker_) worker_->stop();  // the next request starts a worker with both loaded
  worker_.reset();
}

Evaluator::PairedTiming Evaluator::time_pair(const Definition& def, const Workload& workload,
                                             int trial, TimingMethod method, int warmup,
                                             const std::vector<int>& order) {
  PairedTiming t;
  if (peer_library_.empty()) fail("a paired timing needs a peer candidate (set_peer)");
  if (auto load_failure = ensure_worker(def)) {
    t.error = load_failure->message;
    return t;
  }
  Json request = workload_request("time_pair", def, workload, trial);
  request["method"] = timing_method_name(method);
  request["warmup"] = warmup;
  request["order"] = order;
  const WorkerReply r =
      worker_->request(request, options_.workload_timeout, options_.workload_timeout);
  auto lost = [&](const std::string& why) {
    t.error = why + "\n" + worker_->log_tail();
    worker_->stop();
    worker_.reset();
    return t;
  };
  if (r.kind != WorkerReply::Kind::kReply) return lost(r.detail);
  if (!r.body.value("ok", false)) return lost(r.body.value("error", "unknown worker error"));
  t.error = r.body.value("error", "");
  auto samples = [](const Json& list) {
    std::vector<TimingSample> out;
    for (const auto& s : list)
      out.push_back(make_timing_sample(s.at("seconds").get<double>(),
                                       s.at("sm_clock_mhz").get<double>(),
                                       s.at("throttle_reasons").get<std::uint64_t>()));
    return out;
  };
  t.a = samples(r.body.at("samples").at(0));
  t.b = samples(r.body.at("samples").at(1));
  t.environment = r.body.value("environment", Json(nullptr));
  t.cost = r.body.value("cost", Json(nullptr));
  return t;
}

Json Evaluator::workload_request(const char* op, const Definition& def, const Workload& workload,
                                 int trial) const {
  return {{"op", op},
          {"root", options_.root.string()},
          {"definition", def.name},
          {"workload", workload.uuid},
          // The workload itself travels: one from a --workloads file need not be in the dataset.
          {"workload_json", workload.to_json()},
          {"trial", trial},
          {"seed", options_.seed},
          {"variant", options_.variant}};
}

WorkloadVerdict Evaluator::evaluate(const Definition& def, const Workload& workload) {
  WorkloadVerdict v;
  v.workload = workload.uuid;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.workload_timeout;
  for (int trial = 0; trial < options_.trials; ++trial) {
    if (auto load_failure = ensure_worker(def)) {
      v.check = *load_failure;
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Json request = workload_request("trial", def, workload, trial);
    request["official"] = options_.official;
    request["sanitize"] = options_.sanitize;
    request["cpu_reference"] = options_.cpu_reference;
    const auto sent = std::chrono::steady_clock::now();
    const WorkerReply r = worker_->request(request, options_.call_timeout,
                                           std::max(left, std::chrono::milliseconds(1)));
    ++v.trials_run;
    add_trial_phases(v, r, std::chrono::steady_clock::now() - sent);
    CheckResult result;
    if (r.kind == WorkerReply::Kind::kTimeout) {
      result = failure(EvalStatus::kTimeout, r.detail);
      v.log_tail = worker_->log_tail();
      worker_.reset();
    } else if (r.kind == WorkerReply::Kind::kCrash) {
      result = failure(EvalStatus::kRuntimeError, r.detail);
      v.log_tail = worker_->log_tail();
      worker_.reset();
    } else if (!r.body.value("ok", false) && r.body.value("kind", "") == "device") {
      result = failure(EvalStatus::kRuntimeError, r.body.value("error", ""));
    } else if (!r.body.value("ok", false)) {
      // An error in kh's own inputs (bad workload) is not the candidate's fault: report it as
      // the harness's error rather than a verdict.
      const std::string error = r.body.value("error", "unknown worker error");
      const std::string prefix = "workload " + workload.uuid + ": ";
      if (error.rfind(prefix, 0) == 0) fail("{}", error);  // the generator named it already
      fail("{}{}", prefix, error);
    } else {
      result = check_result_from_json(r.body);
      if (r.body.contains("deterministic") && r.body["deterministic"].is_boolean() &&
          !r.body["deterministic"].get<bool>())
        v.nondeterministic = true;
    }
    // A worker whose candidate failed at run time may hold a dead CUDA context: replace it.
    if (result.status == EvalStatus::kRuntimeError && worker_) {
      v.log_tail = worker_->log_tail();
      worker_->stop();
      worker_.reset();
    }
    accumulate(v.check, result);
    if (v.check.terminal) break;
  }
  if (options_.sanitize) apply_sanitizer_report(v);
  if (options_.timing && v.check.passed()) time_workload(def, workload, v);
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return v;
}

void Evaluator::time_workload(const Definition& def, const Workload& workload, WorkloadVerdict& v) {
  const TimingConfig config = options_.timing_config.value_or(official_timing_config(def.name));
  std::vector<std::vector<TimingSample>> trials;
  auto runtime_error = [&](const std::string& why) {
    v.check = failure(EvalStatus::kRuntimeError, "timing: " + why);
    if (worker_) {
      v.log_tail = worker_->log_tail();
      worker_->stop();
      worker_.reset();
    }
  };
  for (int trial = 0; trial < config.trials; ++trial) {
    if (auto load_failure = ensure_worker(def)) {
      v.check = *load_failure;
      return;
    }
    Json request = workload_request("time", def, workload, trial);
    request["method"] = timing_method_name(*options_.timing);
    request["warmup"] = config.warmup;
    request["iterations"] = config.iterations;
    const WorkerReply r =
        worker_->request(request, options_.workload_timeout, options_.workload_timeout);
    if (r.kind != WorkerReply::Kind::kReply) return runtime_error(r.detail);
    if (!r.body.value("ok", false)) {
      if (r.body.value("kind", "") == "device") return runtime_error(r.body.value("error", ""));
      fail("workload {}: timing: {}", workload.uuid, r.body.value("error", "unknown worker error"));
    }
    if (const std::string e = r.body.value("error", ""); !e.empty()) return runtime_error(e);
    std::vector<TimingSample> samples;
    for (const auto& s : r.body.at("samples"))
      samples.push_back(make_timing_sample(s.at("seconds").get<double>(),
                                           s.at("sm_clock_mhz").get<double>(),
                                           s.at("throttle_reasons").get<std::uint64_t>()));
    trials.push_back(std::move(samples));
    if (trial == 0) {
      v.cost = r.body.value("cost", Json(nullptr));
      v.environment = r.body.value("environment", Json(nullptr));
    }
  }
  v.timing = summarize_timing(*options_.timing, config, std::move(trials));
}

}  // namespace kh
