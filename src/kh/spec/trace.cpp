#include "kh/spec/trace.h"

#include <cmath>
#include <limits>

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr std::pair<EvalStatus, std::string_view> kStatusNames[] = {
    {EvalStatus::kPassed, "PASSED"},
    {EvalStatus::kIncorrectShape, "INCORRECT_SHAPE"},
    {EvalStatus::kIncorrectNumerical, "INCORRECT_NUMERICAL"},
    {EvalStatus::kIncorrectDtype, "INCORRECT_DTYPE"},
    {EvalStatus::kRuntimeError, "RUNTIME_ERROR"},
    {EvalStatus::kCompileError, "COMPILE_ERROR"},
    {EvalStatus::kTimeout, "TIMEOUT"},
};

}  // namespace

std::string_view status_name(EvalStatus s) {
  for (const auto& [status, name] : kStatusNames)
    if (status == s) return name;
  return "UNKNOWN";
}

std::optional<EvalStatus> status_from_name(std::string_view name) {
  for (const auto& [status, n] : kStatusNames)
    if (n == name) return status;
  return std::nullopt;
}

Json json_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double parse_json_float(const JsonCursor& c) {
  if (c.json().is_string()) {
    const std::string s = c.as_string();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    c.fail_here("expected a number, \"NaN\" or \"Infinity\", got \"" + s + "\"");
  }
  return c.as_number();
}

Trace Trace::from_json(const JsonCursor& c) {
  c.expect_object();
  Trace t;
  t.definition = c.at("definition").as_string();
  t.workload = Workload::from_json(c.at("workload"));
  if (auto s = c.find("solution")) t.solution = s->as_string();
  if (auto e = c.find("evaluation")) {
    Evaluation ev;
    const std::string status = e->at("status").as_string();
    const auto parsed = status_from_name(status);
    if (!parsed) e->at("status").fail_here("unknown status \"" + status + "\"");
    ev.status = *parsed;
    if (auto env = e->find("environment")) {
      if (auto hw = env->find("hardware")) ev.hardware = hw->as_string();
      if (auto libs = env->find("libs"))
        for (const auto& k : libs->keys()) ev.libs[k] = libs->at(k).as_string();
    }
    if (auto ts = e->find("timestamp")) ev.timestamp = ts->as_string();
    if (auto log = e->find("log")) ev.log = log->as_string();
    if (auto corr = e->find("correctness")) {
      Correctness k;
      k.max_relative_error = parse_json_float(corr->at("max_relative_error"));
      k.max_absolute_error = parse_json_float(corr->at("max_absolute_error"));
      if (auto x = corr->find("extra")) k.extra = x->json();
      ev.correctness = k;
    }
    if (auto perf = e->find("performance")) {
      Performance p;
      p.latency_ms = perf->at("latency_ms").as_number();
      p.reference_latency_ms = perf->at("reference_latency_ms").as_number();
      p.speedup_factor = perf->at("speedup_factor").as_number();
      ev.performance = p;
    }
    // FlashInfer-Bench's presence rules.
    const bool needs_correctness =
        ev.status == EvalStatus::kPassed || ev.status == EvalStatus::kIncorrectNumerical;
    if (needs_correctness != ev.correctness.has_value())
      e->fail_here(std::string("status ") + status +
                   (needs_correctness ? " requires" : " forbids") + " a correctness record");
    if ((ev.status == EvalStatus::kPassed) != ev.performance.has_value())
      e->fail_here(std::string("status ") + status +
                   (ev.status == EvalStatus::kPassed ? " requires" : " forbids") +
                   " a performance record");
    t.evaluation = std::move(ev);
  }
  return t;
}

Json Trace::to_json() const {
  Json j = Json::object();
  j["definition"] = definition;
  j["workload"] = workload.to_json();
  j["solution"] = solution ? Json(*solution) : Json(nullptr);
  if (!evaluation) {
    j["evaluation"] = nullptr;
    return j;
  }
  const Evaluation& ev = *evaluation;
  Json e = Json::object();
  e["status"] = status_name(ev.status);
  Json libs = Json::object();
  for (const auto& [k, v] : ev.libs) libs[k] = v;
  e["environment"] = {{"hardware", ev.hardware}, {"libs", libs}};
  e["timestamp"] = ev.timestamp;
  e["log"] = ev.log;
  if (ev.correctness)
    e["correctness"] = {{"max_relative_error", json_float(ev.correctness->max_relative_error)},
                        {"max_absolute_error", json_float(ev.correctness->max_absolute_error)},
                        {"extra", ev.correctness->extra}};
  if (ev.performance)
    e["performance"] = {{"latency_ms", ev.performance->latency_ms},
                        {"reference_latency_ms", ev.performance->reference_latency_ms},
                        {"speedup_factor", ev.performance->speedup_factor}};
  j["evaluation"] = e;
  return j;
}

}  // namespace kh
