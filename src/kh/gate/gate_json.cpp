#include "kh/gate/gate_json.h"

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr const char* kSource = "gate result";

Verdict verdict_from(const JsonCursor& c) {
  const std::string name = c.as_string();
  for (Verdict v : {Verdict::kWin, Verdict::kTie, Verdict::kLoss})
    if (verdict_name(v) == name) return v;
  c.fail_here("expected \"win\", \"tie\" or \"loss\"");
}

Interval interval_from(const JsonCursor& c) {
  return {c.at("estimate").as_number(), c.at("lo").as_number(), c.at("hi").as_number()};
}

Json group_json(const GroupGate& g) {
  return {{"name", g.name},         {"workloads", g.workloads}, {"objective", interval_json(g.objective)},
          {"p_win", g.p_win},       {"p_loss", g.p_loss},       {"verdict", verdict_name(g.verdict)}};
}

GroupGate group_from(const JsonCursor& c) {
  GroupGate g;
  g.name = c.at("name").as_string();
  const JsonCursor members = c.at("workloads");
  for (std::size_t i = 0; i < members.size(); ++i)
    g.workloads.push_back(static_cast<std::size_t>(members.at(i).as_int()));
  g.objective = interval_from(c.at("objective"));
  g.p_win = c.at("p_win").as_number();
  g.p_loss = c.at("p_loss").as_number();
  g.verdict = verdict_from(c.at("verdict"));
  return g;
}

std::vector<double> numbers(const JsonCursor& c) {
  std::vector<double> out;
  for (std::size_t i = 0; i < c.size(); ++i) out.push_back(c.at(i).as_number());
  return out;
}

}  // namespace

std::string_view objective_name(GateObjective o) {
  return o == GateObjective::kMeanSpeedup ? "mean_speedup" : "mean_latency";
}

GateObjective parse_objective(std::string_view name) {
  if (name == "mean_latency") return GateObjective::kMeanLatency;
  if (name == "mean_speedup") return GateObjective::kMeanSpeedup;
  fail("objective '{}': expected mean_latency (the seed system's metric) or mean_speedup (the "
       "contest's score)",
       name);
}

Json interval_json(const Interval& i) {
  return {{"estimate", i.estimate}, {"lo", i.lo}, {"hi", i.hi}};
}

Json paired_gate_json(const PairedGateResult& r) {
  Json workloads = Json::array();
  for (const WorkloadGate& w : r.workloads)
    workloads.push_back({{"workload", w.workload},
                         {"speedup", interval_json(w.speedup)},
                         {"p_win", w.p_win},
                         {"p_loss", w.p_loss},
                         {"verdict", verdict_name(w.verdict)}});
  Json groups = Json::array();
  for (const GroupGate& g : r.groups) groups.push_back(group_json(g));
  return {{"objective", objective_name(r.objective)},
          {"overall", group_json(r.overall)},
          {"groups", groups},
          {"workloads", workloads},
          {"both_correct", r.both_correct},
          {"a_correct", r.a_correct},
          {"b_correct", r.b_correct}};
}

PairedGateResult paired_gate_from_json(const Json& j) {
  const JsonCursor c(j, kSource);
  PairedGateResult r;
  r.objective = parse_objective(c.at("objective").as_string());
  r.overall = group_from(c.at("overall"));
  const JsonCursor groups = c.at("groups");
  for (std::size_t i = 0; i < groups.size(); ++i) r.groups.push_back(group_from(groups.at(i)));
  const JsonCursor workloads = c.at("workloads");
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    const JsonCursor w = workloads.at(i);
    WorkloadGate g;
    g.workload = w.at("workload").as_string();
    g.speedup = interval_from(w.at("speedup"));
    g.p_win = w.at("p_win").as_number();
    g.p_loss = w.at("p_loss").as_number();
    g.verdict = verdict_from(w.at("verdict"));
    r.workloads.push_back(std::move(g));
  }
  r.both_correct = c.at("both_correct").as_bool();
  r.a_correct = c.find("a_correct") ? c.at("a_correct").as_bool() : r.both_correct;
  r.b_correct = c.find("b_correct") ? c.at("b_correct").as_bool() : r.both_correct;
  return r;
}

Json paired_samples_json(const std::vector<WorkloadSamples>& samples) {
  Json out = Json::array();
  for (const WorkloadSamples& s : samples) {
    Json rounds = Json::array();
    for (const PairedRound& r : s.rounds) rounds.push_back({{"a", r.a}, {"b", r.b}});
    out.push_back({{"workload", s.workload},
                   {"a_correct", s.a_correct},
                   {"b_correct", s.b_correct},
                   {"rounds", rounds}});
  }
  return out;
}

std::vector<WorkloadSamples> paired_samples_from_json(const Json& j) {
  const JsonCursor c(j, "gate samples");
  c.expect_array();
  std::vector<WorkloadSamples> out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const JsonCursor w = c.at(i);
    WorkloadSamples s;
    s.workload = w.at("workload").as_string();
    s.a_correct = w.at("a_correct").as_bool();
    s.b_correct = w.at("b_correct").as_bool();
    const JsonCursor rounds = w.at("rounds");
    for (std::size_t k = 0; k < rounds.size(); ++k)
      s.rounds.push_back({numbers(rounds.at(k).at("a")), numbers(rounds.at(k).at("b"))});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kh
