// The worker process: loads one candidate library, then runs trials on request. Everything that
// touches candidate code happens here, so a crash or a hang loses only this process.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "kh/build/builder.h"
#include "kh/core/error.h"
#include "kh/gpu/call_timer.h"
#include "kh/run/builtin_candidates.h"
#include "kh/run/call_inputs.h"
#include "kh/run/candidate_library.h"
#include "kh/run/host_call_timer.h"
#include "kh/run/python_callables.h"
#include "kh/run/timed_trial.h"
#include "kh/run/trial_runner.h"
#include "kh/run/worker_protocol.h"
#include "kh/spec/dataset.h"
#include "kh/spec/trace.h"

namespace kh {

Json check_result_json(const CheckResult& r) {
  return {{"status", status_name(r.status)},
          {"max_absolute_error", json_float(r.max_absolute_error)},
          {"max_relative_error", json_float(r.max_relative_error)},
          {"matched_ratio", r.matched_ratio},
          {"message", r.message},
          {"terminal", r.terminal}};
}

CheckResult check_result_from_json(const Json& j) {
  const JsonCursor c(j, "worker reply");
  CheckResult r;
  const auto status = status_from_name(c.at("status").as_string());
  if (!status) c.at("status").fail_here("unknown status");
  r.status = *status;
  r.max_absolute_error = parse_json_float(c.at("max_absolute_error"));
  r.max_relative_error = parse_json_float(c.at("max_relative_error"));
  r.matched_ratio = c.at("matched_ratio").as_number();
  r.message = c.at("message").as_string();
  r.terminal = c.at("terminal").as_bool();
  return r;
}

namespace {

class Worker {
 public:
  Worker(std::unique_ptr<MemoryBackend> backend, FILE* protocol, PythonHooks python)
      : backend_(std::move(backend)), out_(protocol), python_(python) {}

  void send(const Json& j) {
    // Invalid UTF-8 in a message (a candidate's) is replaced, not fatal to the worker.
    const std::string line = j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }

  Json handle(const Json& request) {
    const JsonCursor c(request, "request");
    const std::string op = c.at("op").as_string();
    if (op == "load") {
      // "slot": "peer" loads the second candidate of a paired gate beside the first; "oracle"
      // loads the definition's PyTorch reference as the judge of later trials.
      const std::string slot_name = c.has("slot") ? c.at("slot").as_string() : "";
      std::unique_ptr<CandidateLibrary>& slot =
          slot_name == "peer" ? peer_ : slot_name == "oracle" ? oracle_ : library_;
      slot.reset();
      try {
        open_dataset(c.at("root").as_string());
        if (slot_name == "oracle") {
          slot = load_python_reference(python_, dataset_->definition(c.at("definition").as_string()));
        } else {
          slot = load_candidate(c.at("library").as_string(), c.at("entry").as_string());
        }
      } catch (const Error& e) {
        return {{"ok", false}, {"kind", "load"}, {"error", e.what()}};
      }
      return {{"ok", true}};
    }
    if (op == "trial") {
      if (!library_) return {{"ok", false}, {"kind", "internal"}, {"error", "no candidate loaded"}};
      auto trial_options = [](const JsonCursor& request) {
        TrialOptions o;
        o.official = request.at("official").as_bool();
        o.red_zones = !request.at("sanitize").as_bool();
        o.cpu_reference = request.at("cpu_reference").as_bool();
        return o;
      };
      TrialOptions options = trial_options(c);
      options.oracle = oracle_.get();
      const InputGenerator generator = generator_for(c);
      CallObserver observer{[this] {
                              send({{"event", kEventCallStart}});
                            },
                            [this] {
                              send({{"event", kEventCallEnd}});
                            }};
      const TrialResult r = run_trial(*backend_, *library_, generator, c.at("trial").as_int(),
                                      options, observer);
      Json reply = check_result_json(r.check);
      reply["ok"] = true;
      reply["calls"] = r.calls;
      reply["deterministic"] = r.determinism_checked ? Json(r.deterministic) : Json(nullptr);
      reply["phases"] = {{"inputs", r.phases.inputs},
                         {"buffers", r.phases.buffers},
                         {"reference", r.phases.reference},
                         {"calls", r.phases.calls},
                         {"checks", r.phases.checks}};
      return reply;
    }
    if (op == "time") return time(c);
    if (op == "time_pair") return time_pair(c);
    return {{"ok", false}, {"kind", "internal"}, {"error", "unknown op '" + op + "'"}};
  }

 private:
  // A built library, a Python candidate's manifest, or a builtin (whose entry names the
  // definition).
  std::unique_ptr<CandidateLibrary> load_candidate(const std::string& library,
                                                   const std::string& entry) {
    if (library == kDefinitionReferenceBuiltin)
      return load_python_reference(python_, dataset_->definition(entry));
    if (is_builtin_candidate(library))
      return make_builtin_candidate(library, dataset_->definition(entry));
    if (is_python_candidate_library(library)) {
      const Json manifest = read_json_file(library);
      const JsonCursor m(manifest, library);
      return load_python_candidate(python_, library,
                                   dataset_->definition(m.at("definition").as_string()));
    }
    return std::make_unique<CandidateLibrary>(library, entry);
  }

  // The inputs of the workload a trial or time request names ("root", "definition", "workload"
  // or the workload itself in "workload_json", "seed", "variant").
  InputGenerator generator_for(const JsonCursor& c) {
    open_dataset(c.at("root").as_string());
    const Definition& def = dataset_->definition(c.at("definition").as_string());
    Workload workload = c.has("workload_json")
                            ? Workload::from_json(c.at("workload_json"))
                            : find_workload(*dataset_, def, c.at("workload").as_string());
    return InputGenerator(def, std::move(workload), dataset_->root(),
                          GeneratorOptions{static_cast<std::uint64_t>(c.at("seed").as_int()),
                                           c.at("variant").as_string()});
  }

  // The backend's timer, created by the first timed request: CallTimer on cuda (cupti, events,
  // graph), HostCallTimer on cpu (wall). A method of the other backend is an input error
  // (check_timing_backend) that names both.
  InterleavedTimer& timer_for(TimingMethod method) {
    check_timing_backend(method, backend_->name());
    if (!timer_) {
      if (backend_->device().device_type == kDLCUDA)
        timer_ = std::make_unique<CallTimer>(backend_->device().device_id, backend_->stream());
      else
        timer_ = std::make_unique<HostCallTimer>();
    }
    return *timer_;
  }

  // One timed trial (worker_protocol.h): samples, or the error the official timer would raise.
  Json time(const JsonCursor& c) {
    if (!library_) return {{"ok", false}, {"kind", "internal"}, {"error", "no candidate loaded"}};
    const TimingMethod method = parse_timing_method(c.at("method").as_string());
    InterleavedTimer& timer = timer_for(method);
    const InputGenerator generator = generator_for(c);
    const PythonTimedScope timed_calls;
    const TimingConfig config{static_cast<int>(c.at("warmup").as_int()),
                              static_cast<int>(c.at("iterations").as_int()), 1};
    const TimedTrial t = run_timed_trial(*backend_, *library_, generator, c.at("trial").as_int(),
                                         method, config, timer);
    Json reply = {{"ok", true},
                  {"samples", samples_json(t.timing)},
                  {"error", t.timing.error},
                  {"environment", timer.environment_json()}};
    if (t.cost)
      reply["cost"] = call_cost_json(*t.cost);
    else
      reply["cost_error"] = t.cost_error;
    if (c.has("timeline")) reply["timeline"] = timeline_json(t.timing.last_call);
    return reply;
  }

  // The last timed call's activities, times relative to the first one's start.
  static Json timeline_json(const std::vector<GpuActivity>& activities) {
    Json out = Json::array();
    const std::uint64_t t0 = activities.empty() ? 0 : activities.front().start_ns;
    for (const auto& a : activities)
      out.push_back({{"kind", a.kind == GpuActivity::Kind::kKernel   ? "kernel"
                              : a.kind == GpuActivity::Kind::kMemcpy ? "memcpy"
                                                                     : "memset"},
                     {"name", a.name},
                     {"stream", a.stream_id},
                     {"start_seconds", (a.start_ns - t0) * 1e-9},
                     {"duration_seconds", (a.end_ns - a.start_ns) * 1e-9}});
    return out;
  }

  static Json samples_json(const TrialTiming& t) {
    Json samples = Json::array();
    for (const auto& s : t.samples)
      samples.push_back({{"seconds", s.seconds},
                         {"sm_clock_mhz", s.sm_clock_mhz},
                         {"throttle_reasons", s.throttle_reasons}});
    return samples;
  }

  // One round of a paired gate on one workload (worker_protocol.h): the loaded candidate (0) and
  // its peer (1) on the same inputs, timed in the request's order.
  Json time_pair(const JsonCursor& c) {
    if (!library_ || !peer_)
      return {
          {"ok", false}, {"kind", "internal"}, {"error", "a paired timing needs two candidates"}};
    const TimingMethod method = parse_timing_method(c.at("method").as_string());
    InterleavedTimer& timer = timer_for(method);
    const InputGenerator generator = generator_for(c);
    const PythonTimedScope timed_calls;
    std::vector<int> order;
    for (std::size_t i = 0; i < c.at("order").size(); ++i)
      order.push_back(static_cast<int>(c.at("order").at(i).as_int()));
    const TimedCalls t =
        run_timed_calls(*backend_, {library_.get(), peer_.get()}, generator, c.at("trial").as_int(),
                        method, static_cast<int>(c.at("warmup").as_int()), order, timer);
    Json reply = {
        {"ok", true},
        {"samples", Json::array({samples_json(t.timings[0]), samples_json(t.timings[1])})},
        {"error", t.timings[0].error},
        {"environment", timer.environment_json()}};
    if (t.cost) reply["cost"] = call_cost_json(*t.cost);
    return reply;
  }

  void open_dataset(const std::string& root) {
    if (dataset_ && dataset_root_ == root) return;
    dataset_ = std::make_unique<Dataset>(Dataset::open(root));
    dataset_root_ = root;
  }

  std::unique_ptr<MemoryBackend> backend_;
  FILE* out_;
  std::unique_ptr<CandidateLibrary> library_;
  std::unique_ptr<CandidateLibrary> peer_;   // a paired gate's second candidate
  std::unique_ptr<CandidateLibrary> oracle_;  // the definition's PyTorch reference, when asked
  PythonHooks python_;                        // set in the Python worker only
  std::unique_ptr<InterleavedTimer> timer_;  // created by the first timed request (timer_for)
  std::unique_ptr<Dataset> dataset_;
  std::string dataset_root_;
};

}  // namespace

int run_worker(const std::string& backend_name, int device, const PythonHooks& python) {
  // Keep the real stdout for the protocol; anything else written to fd 1 goes to the log.
  const int protocol_fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  FILE* protocol = fdopen(protocol_fd, "w");
  std::unique_ptr<MemoryBackend> backend;
  if (backend_name == "cpu") {
    backend = make_cpu_backend();
  } else if (backend_name == "cuda") {
    backend = make_cuda_backend(device);
  } else {
    fail("unknown backend '{}' (cpu or cuda)", backend_name);
  }
  Worker worker(std::move(backend), protocol, python);
  worker.send({{"event", "ready"},
               {"pid", static_cast<long>(getpid())},
               {"backend", backend_name},
               {"python", python.present()}});
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    Json request = parse_json(line, "worker request");
    const Json id = request.value("id", Json(nullptr));
    if (request.value("op", "") == "quit") {
      worker.send({{"id", id}, {"ok", true}});
      return 0;
    }
    Json reply;
    try {
      reply = worker.handle(request);
    } catch (const DeviceError& e) {
      reply = {{"ok", false}, {"kind", "device"}, {"error", e.what()}};
    } catch (const Error& e) {
      reply = {{"ok", false}, {"kind", "input"}, {"error", e.what()}};
    } catch (const std::exception& e) {
      reply = {{"ok", false}, {"kind", "internal"}, {"error", e.what()}};
    }
    reply["id"] = id;
    worker.send(reply);
  }
  return 0;
}

}  // namespace kh
