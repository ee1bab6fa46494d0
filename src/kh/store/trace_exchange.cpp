#include "kh/store/trace_exchange.h"

#include <istream>
#include <map>
#include <ostream>

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/spec/trace.h"

namespace kh {
namespace {

constexpr const char* kUnstatedReference =
    "not stated by the trace (FlashInfer-Bench times the definition's reference by default)";

std::string environment_gpu(const ArtifactStore& store, const EvaluationRecord& e) {
  if (e.environment.empty()) return e.options.value("backend", std::string("cpu"));
  const auto env = store.environment(e.environment);
  if (!env || !env->environment.contains("gpu")) return "unknown";
  return env->environment.at("gpu").get<std::string>();
}

bool has_correctness(EvalStatus s) {
  return s == EvalStatus::kPassed || s == EvalStatus::kIncorrectNumerical;
}

}  // namespace

int export_traces(const ArtifactStore& store, const std::vector<EvaluationRecord>& evaluations,
                  const TraceExportOptions& options, std::ostream& out) {
  std::map<std::string, double> baseline_latency;
  for (const auto& b : options.baseline_evaluations)
    if (b.status == "PASSED" && b.summary) baseline_latency[b.workload] = b.summary->latency;
  std::map<std::string, std::string> names;  // candidate hash -> name
  int written = 0;
  for (const auto& e : evaluations) {
    const auto workload = store.workload_json(e.workload);
    if (!workload)
      fail("trace export: workload {} of evaluation {} is not in the store", e.workload,
           e.id.substr(0, 12));
    if (!names.count(e.candidate)) {
      const auto c = store.candidate(e.candidate);
      names[e.candidate] = c ? c->name : e.candidate;
    }
    Trace t;
    t.definition = e.definition;
    t.workload = Workload::from_json(JsonCursor(*workload, "store workload " + e.workload));
    t.solution = names[e.candidate];
    Evaluation ev;
    const auto status = status_from_name(e.status);
    if (!status) fail("trace export: evaluation {} has status '{}'", e.id, e.status);
    ev.status = *status;
    ev.hardware = environment_gpu(store, e);
    ev.libs["kh_timing_method"] = e.timing_method.empty() ? "none" : e.timing_method;
    ev.timestamp = e.created_at;
    ev.log = e.message;
    if (has_correctness(*status)) {
      Correctness k;
      k.max_absolute_error = e.max_absolute_error;
      k.max_relative_error = e.max_relative_error;
      k.extra = {{"matched_ratio", e.matched_ratio}};
      ev.correctness = k;
    }
    if (*status == EvalStatus::kPassed && e.summary) {
      Performance p;
      p.latency_ms = e.summary->latency * 1e3;
      auto ref = baseline_latency.find(e.workload);
      if (options.baseline && ref != baseline_latency.end()) {
        p.reference_latency_ms = ref->second * 1e3;
        p.speedup_factor = ref->second / e.summary->latency;
        ev.correctness->extra["reference_timed"] = "kh candidate " + options.baseline->name + " (" +
                                                   options.baseline->hash.substr(0, 12) +
                                                   "), same timing method";
      }
      ev.performance = p;
    }
    t.evaluation = ev;
    out << t.to_json().dump() << "\n";
    ++written;
  }
  return written;
}

TraceImportStats import_traces(ArtifactStore& store, std::istream& in, const std::string& source) {
  TraceImportStats stats;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(number);
    const Json j = parse_json(line, where);
    const Trace t = Trace::from_json(JsonCursor(j, where));
    ++stats.lines;
    store.put_workload(t.definition, t.workload.uuid, t.workload.to_json());
    if (!t.solution || !t.evaluation) {
      ++stats.without_evaluation;
      continue;
    }
    CandidateRecord c;
    c.hash = sha256_hex("flashinfer-bench trace solution\n" + t.definition + "\n" + *t.solution);
    c.name = *t.solution;
    c.definition = t.definition;
    c.created_at = utc_timestamp();
    store.put_candidate(c);

    const Evaluation& ev = *t.evaluation;
    EvaluationRecord e;
    e.candidate = c.hash;
    e.definition = t.definition;
    e.workload = t.workload.uuid;
    e.status = std::string(status_name(ev.status));
    e.message = ev.log;
    e.options = {{"source", "flashinfer-bench trace"}, {"file", source}, {"hardware", ev.hardware}};
    if (ev.correctness) {
      e.max_absolute_error = ev.correctness->max_absolute_error;
      e.max_relative_error = ev.correctness->max_relative_error;
      e.matched_ratio = ev.status == EvalStatus::kPassed ? 1 : 0;
    }
    if (ev.performance && ev.status == EvalStatus::kPassed) {
      e.timing_method = "trace";
      SampleSummary s;
      s.latency = s.median = s.mean = s.min = s.max = s.p95 = ev.performance->latency_ms * 1e-3;
      e.summary = s;
      if (ev.performance->reference_latency_ms > 0) {
        e.reference_latency = ev.performance->reference_latency_ms * 1e-3;
        e.reference_label = kUnstatedReference;
        if (ev.correctness && ev.correctness->extra.is_object() &&
            ev.correctness->extra.contains("reference_timed"))
          e.reference_label = ev.correctness->extra.at("reference_timed").get<std::string>();
      }
    }
    e.created_at = ev.timestamp.empty() ? utc_timestamp() : ev.timestamp;
    store.put_evaluation(e);
    ++stats.evaluations;
  }
  return stats;
}

}  // namespace kh
