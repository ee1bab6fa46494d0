#include "kh/run/evaluation_record.h"

#include "kh/core/sha256.h"
#include "kh/roofline/call_cost.h"
#include "kh/run/host_call_timer.h"
#include "kh/spec/trace.h"
#include "kh/store/artifact_store.h"

namespace kh {
namespace {

// No floor for a timing on the cpu backend: ceilings are a GPU's.
std::optional<double> floor_of(const WorkloadVerdict& v,
                               const std::optional<MachineCeilings>& ceilings) {
  if (!ceilings || !v.cost.is_object() || is_cpu_environment(v.environment)) return std::nullopt;
  return floor_seconds(call_cost_from_json(v.cost), *ceilings);
}

// {"config", "seconds": [[...] per trial], "sm_clock_mhz": [[...]], "throttle_reasons": [[...]]}:
// columnar, so a full sweep's samples stay a few MiB in a bundle.
Json columnar_samples(const TimingResult& t) {
  Json seconds = Json::array(), clocks = Json::array(), reasons = Json::array();
  for (const auto& trial : t.trials) {
    Json s = Json::array(), c = Json::array(), r = Json::array();
    for (const auto& sample : trial) {
      s.push_back(sample.seconds);
      c.push_back(sample.sm_clock_mhz);
      r.push_back(sample.throttle_reasons);
    }
    seconds.push_back(std::move(s));
    clocks.push_back(std::move(c));
    reasons.push_back(std::move(r));
  }
  return {{"config",
           {{"warmup", t.config.warmup},
            {"iterations", t.config.iterations},
            {"trials", t.config.trials}}},
          {"seconds", seconds},
          {"sm_clock_mhz", clocks},
          {"throttle_reasons", reasons}};
}

}  // namespace

Json evaluation_options_json(const EvalOptions& o) {
  return {{"backend", o.backend}, {"official", o.official},
          {"seed", o.seed},       {"variant", o.variant},
          {"trials", o.trials},   {"reference", o.cpu_reference ? "cpu" : "auto"}};
}

std::optional<MachineCeilings> ceilings_for(const WorkloadVerdict& v,
                                            const std::optional<MachineCeilings>& given) {
  if (is_cpu_environment(v.environment)) return std::nullopt;  // a GPU's ceilings do not apply
  if (given) return given;
  if (!v.environment.is_object() || !v.environment.contains("gpu")) return std::nullopt;
  const auto stored = default_ceilings_path(v.environment.at("gpu").get<std::string>());
  if (!std::filesystem::exists(stored)) return std::nullopt;
  return load_ceilings(stored);
}

EvaluationRecord evaluation_record(const WorkloadVerdict& v, const VerdictContext& ctx,
                                   std::optional<EnvironmentRecord>* environment) {
  EvaluationRecord e;
  e.candidate = ctx.candidate;
  e.definition = ctx.definition;
  e.workload = v.workload;
  e.sweep = ctx.sweep;
  e.attempt = ctx.attempt;
  e.status = std::string(status_name(v.check.status));
  e.max_absolute_error = v.check.max_absolute_error;
  e.max_relative_error = v.check.max_relative_error;
  e.matched_ratio = v.check.matched_ratio;
  e.message = v.check.message;
  e.log_tail = v.log_tail;
  e.trials = v.trials_run;
  e.nondeterministic = v.nondeterministic;
  e.options = ctx.options;
  e.cost = v.cost;
  e.seconds = v.seconds;
  e.created_at = utc_timestamp();
  if (environment) environment->reset();
  if (v.timing) {
    const TimingResult& t = *v.timing;
    e.timing_method = std::string(timing_method_name(t.method));
    std::vector<std::vector<double>> seconds;
    for (const auto& trial : t.trials) {
      seconds.emplace_back();
      for (const auto& s : trial) seconds.back().push_back(s.seconds);
    }
    e.summary = summarize_samples(seconds, t.throttled_samples);
    e.samples = columnar_samples(t);
    if (auto floor = floor_of(v, ctx.ceilings)) {
      e.floor_seconds = *floor;
      e.fraction_of_floor = fraction_of_floor(t.latency_seconds, *floor);
    }
    if (v.environment.is_object()) {
      EnvironmentRecord env{sha256_hex(v.environment.dump()), v.environment};
      e.environment = env.hash;
      if (environment) *environment = std::move(env);
    }
  }
  return e;
}

Json verdict_timing_json(const WorkloadVerdict& v, const std::optional<MachineCeilings>& ceilings) {
  if (!v.timing) return nullptr;
  Json j = timing_result_json(*v.timing);
  j["cost"] = v.cost;
  j["environment"] = v.environment;
  if (auto floor = floor_of(v, ceilings)) {
    j["floor_seconds"] = *floor;
    j["fraction_of_floor"] = fraction_of_floor(v.timing->latency_seconds, *floor);
    j["ceilings_gpu"] = ceilings->gpu;
  }
  return j;
}

}  // namespace kh
