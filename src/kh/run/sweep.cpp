#include "kh/run/sweep.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/run/evaluation_record.h"

namespace kh {
namespace {

Json timing_options_json(const EvalOptions& o) {
  if (!o.timing) return nullptr;
  Json j = {{"method", timing_method_name(*o.timing)}};
  if (o.timing_config)
    j["config"] = {{"warmup", o.timing_config->warmup},
                   {"iterations", o.timing_config->iterations},
                   {"trials", o.timing_config->trials}};
  return j;
}

Json sweep_options_json(const SweepRequest& r) {
  Json j = evaluation_options_json(r.eval);
  j["timing"] = timing_options_json(r.eval);
  return j;
}

// A verdict for an item whose candidate did not build: nothing is run.
WorkloadVerdict compile_error_verdict(const SweepCandidate& c, const std::string& workload) {
  WorkloadVerdict v;
  v.workload = workload;
  v.check.status = EvalStatus::kCompileError;
  v.check.matched_ratio = 0;
  v.check.message = c.build.log;
  return v;
}

// One worker thread's evaluators, one per candidate (each its own worker process), created on
// first use so a thread that never meets a candidate starts nothing for it.
class DeviceLane {
 public:
  DeviceLane(const SweepRequest& r, int device) : request_(r), device_(device) {}

  WorkloadVerdict evaluate(std::size_t candidate, const Workload& w) {
    const SweepCandidate& c = request_.candidates[candidate];
    if (!c.build.ok) return compile_error_verdict(c, w.uuid);
    auto& slot = evaluators_[candidate];
    if (!slot) {
      EvalOptions o = request_.eval;
      o.device = device_;
      slot = std::make_unique<Evaluator>(o, c.build.library.string(), c.entry);
    }
    return slot->evaluate(request_.definition, w);
  }

  // The ceilings for floors: the request's, else those stored for this lane's GPU, read once
  // from the first timed verdict.
  const std::optional<MachineCeilings>& ceilings(const WorkloadVerdict& v) {
    if (!ceilings_ && v.timing) ceilings_ = ceilings_for(v, request_.ceilings);
    return ceilings_;
  }

 private:
  const SweepRequest& request_;
  int device_;
  std::optional<MachineCeilings> ceilings_;
  std::map<std::size_t, std::unique_ptr<Evaluator>> evaluators_;
};

}  // namespace

std::string sweep_plan_key(const SweepRequest& r) {
  Json plan = {{"definition", r.definition.name}, {"options", sweep_options_json(r)}};
  Json candidates = Json::array(), workloads = Json::array();
  for (const auto& c : r.candidates) candidates.push_back(c.record.hash);
  for (const auto& w : r.workloads) workloads.push_back(w.uuid);
  plan["candidates"] = candidates;
  plan["workloads"] = workloads;
  return sha256_hex(plan.dump());
}

std::vector<SweepItem> plan_sweep_items(const std::string& sweep_id, const SweepRequest& r) {
  std::vector<SweepItem> items;
  const std::size_t n = r.candidates.size();
  for (std::size_t w = 0; w < r.workloads.size(); ++w) {
    for (std::size_t k = 0; k < n; ++k) {
      SweepItem item;
      item.sweep = sweep_id;
      item.position = static_cast<int>(items.size());
      item.candidate = r.candidates[(w + k) % n].record.hash;
      item.workload = r.workloads[w].uuid;
      items.push_back(std::move(item));
    }
  }
  return items;
}

SweepOutcome run_sweep(ArtifactStore& store, const SweepRequest& r,
                       const SweepProgressFn& progress) {
  if (r.candidates.empty()) fail("a sweep needs at least one candidate");
  if (r.workloads.empty()) fail("definition {}: no workloads to sweep", r.definition.name);
  if (r.devices.empty()) fail("a sweep needs at least one device or job");

  store.put_definition(r.definition.name, r.definition.to_json());
  for (const auto& w : r.workloads) store.put_workload(r.definition.name, w.uuid, w.to_json());

  SweepOutcome out;
  const std::string plan_key = sweep_plan_key(r);
  std::optional<SweepRecord> previous;
  if (r.resume || r.retry_failed) previous = store.latest_sweep(plan_key);
  if (previous && r.resume && !r.retry_failed && !previous->finished_at.empty())
    previous.reset();  // --resume of a finished sweep: nothing to continue, a new one starts
  if (previous) {
    out.sweep = *previous;
    out.continued = true;
  } else {
    out.sweep.plan_key = plan_key;
    out.sweep.definition = r.definition.name;
    for (const auto& c : r.candidates) out.sweep.candidates.push_back(c.record.hash);
    out.sweep.options = sweep_options_json(r);
    out.sweep.created_at = utc_timestamp();
    out.sweep.id = sha256_hex(plan_key + "@" + out.sweep.created_at);
    store.put_sweep(out.sweep);
    for (const auto& item : plan_sweep_items(out.sweep.id, r)) store.put_sweep_item(item);
  }

  std::vector<SweepItem> items = store.sweep_items(out.sweep.id);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const SweepItemState s = items[i].state;
    if (s == SweepItemState::kPending || (r.retry_failed && s == SweepItemState::kFailed))
      todo.push_back(i);
    else
      ++out.already_done;
  }

  std::map<std::string, std::size_t> candidate_index;
  for (std::size_t k = 0; k < r.candidates.size(); ++k)
    candidate_index[r.candidates[k].record.hash] = k;
  std::map<std::string, const Workload*> workload_of;
  for (const auto& w : r.workloads) workload_of[w.uuid] = &w;

  std::mutex store_mutex;  // one writer at a time through this connection
  std::atomic<std::size_t> next{0};
  SweepProgress state;
  state.total = static_cast<int>(todo.size());
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;

  auto lane_main = [&](int device) {
    DeviceLane lane(r, device);
    for (std::size_t t = next++; t < todo.size(); t = next++) {
      SweepItem& item = items[todo[t]];
      try {
        const std::size_t k = candidate_index.at(item.candidate);
        const WorkloadVerdict v = lane.evaluate(k, *workload_of.at(item.workload));
        VerdictContext ctx{item.candidate,    r.definition.name, out.sweep.id,
                           item.attempts + 1, out.sweep.options, lane.ceilings(v)};
        std::optional<EnvironmentRecord> env;
        const EvaluationRecord e = evaluation_record(v, ctx, &env);
        std::lock_guard lock(store_mutex);
        if (env) store.put_environment(*env);
        store.record_attempt(item, e);
        ++state.done;
        ++(v.check.passed() ? state.passed : state.failed);
        state.elapsed_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        state.candidate = r.candidates[k].label;
        state.workload = item.workload;
        if (progress) progress(state);
      } catch (...) {
        std::lock_guard lock(store_mutex);
        if (!error) error = std::current_exception();
        next = todo.size();  // stop the other lanes after their current item
      }
    }
  };
  std::vector<std::thread> lanes;
  for (int device : r.devices) lanes.emplace_back(lane_main, device);
  for (auto& t : lanes) t.join();
  if (error) std::rethrow_exception(error);

  out.ran = state.done;
  for (const auto& item : store.sweep_items(out.sweep.id)) {
    out.passed += item.state == SweepItemState::kPassed;
    out.failed += item.state == SweepItemState::kFailed;
    out.flaky += item.flaky;
  }
  if (out.passed + out.failed == static_cast<int>(items.size()) && out.sweep.finished_at.empty()) {
    out.sweep.finished_at = utc_timestamp();
    store.finish_sweep(out.sweep.id, out.sweep.finished_at);
  }
  return out;
}

}  // namespace kh
