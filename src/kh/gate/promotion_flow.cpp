#include "kh/gate/promotion_flow.h"

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/spec/trace.h"

namespace kh {
namespace {

/// Seeds of the stages' randomisation: distinct, derived from the request's so a flow is
/// reproducible from its recorded seeds.
constexpr std::uint64_t kStageSeedStride = 0x9E3779B97F4A7C15ull;

std::vector<Workload> subset(const std::vector<Workload>& all, const std::vector<std::string>& ids) {
  std::vector<Workload> out;
  for (const auto& id : ids)
    for (const auto& w : all)
      if (w.uuid == id) out.push_back(w);
  return out;
}

std::vector<std::string> uuids(const std::vector<Workload>& ws) {
  std::vector<std::string> out;
  for (const auto& w : ws) out.push_back(w.uuid);
  return out;
}

class Flow {
 public:
  Flow(const PromotionRequest& r, const PromotionStageFn& on_stage,
       const PromotionProgressFn& progress)
      : r_(r), on_stage_(on_stage), progress_(progress) {}

  PromotionOutcome run() {
    if (!r_.retained) return first_candidate();
    PromotionOutcome out;
    out.representatives = representatives();
    const std::vector<WorkloadGroup> groups = groups_of(*out.representatives);
    PromotionEvidence& e = out.evidence;
    e.representative = r_.representative ? *r_.representative : representative_gate();
    if (!representative_gate_passes(*e.representative, r_.rules))
      return decide(std::move(out));
    e.full = gate("full", r_.workloads, groups, 2, r_.run.rounds);
    // Re-measure on fresh samples only what might gain: a full-gate loss or tie is no gain.
    if (e.full->b_correct && e.full->overall.verdict == Verdict::kWin)
      e.remeasured = gate("remeasured", r_.workloads, groups, 3, 2 * r_.run.rounds);
    const bool gain = e.remeasured && e.remeasured->b_correct &&
                      e.remeasured->overall.verdict == Verdict::kWin;
    // A fix (rule 2b) is replayed where it gained nothing but is no slower than the tolerance.
    const bool fix = !r_.rules.fix.empty() && e.full->b_correct &&
                     (!e.remeasured || e.remeasured->b_correct) &&
                     fix_blocker(*e.full, e.remeasured ? &*e.remeasured : nullptr, r_.rules).empty();
    if (gain || fix) replay(out);
    return decide(std::move(out));
  }

  PairedGateResult representative_gate() {
    const RepresentativeSet rep = representatives();
    return gate("representative", subset(r_.workloads, rep.workloads), groups_of(rep), 1, 0);
  }

 private:
  RepresentativeSet representatives() const {
    return select_representatives(partition_regimes(r_.definition, r_.workloads), r_.workloads,
                                  r_.retained_latency);
  }
  static std::vector<WorkloadGroup> groups_of(const RepresentativeSet& rep) {
    std::vector<WorkloadGroup> groups;
    for (const auto& g : rep.groups) groups.push_back(g.group);
    return groups;
  }

  PairedGateResult gate(const std::string& name, const std::vector<Workload>& workloads,
                        const std::vector<WorkloadGroup>& groups, std::uint64_t stage,
                        int first_input_trial) {
    PairedRunOptions o = r_.run;
    o.order_seed = r_.run.order_seed + stage * kStageSeedStride;
    o.first_input_trial = r_.run.first_input_trial + first_input_trial;
    runs_.push_back(run_paired(r_.definition, workloads, *r_.retained, r_.candidate, o,
                               [&](const PairedRunProgress& p) {
                                 if (progress_)
                                   progress_(fmt::format("{} gate: {}", name, p.phase), p.done,
                                             p.total);
                               }));
    const PairedGateResult result = judge_run(runs_.back(), groups, r_.objective, r_.statistics);
    if (on_stage_) on_stage_({name, uuids(workloads), &runs_.back(), &result});
    return result;
  }

  void replay(PromotionOutcome& out) {
    out.replay = run_replay(r_.definition, r_.workloads, r_.candidate, r_.replay,
                            [&](int done, int total, const std::string&) {
                              if (progress_) progress_("replay", done, total);
                            });
    out.evidence.replay = {out.replay->min_realistic_trials(), out.replay->failures(),
                           out.replay->first_failure(), out.replay->skipped(),
                           out.replay->first_skip()};
  }

  PromotionOutcome decide(PromotionOutcome out) {
    out.decision = decide_promotion(out.evidence, r_.rules);
    return out;
  }

  PromotionOutcome first_candidate() {
    PromotionOutcome out;
    FirstCandidateEvidence e;
    const auto verdicts = check_correctness(
        r_.definition, r_.workloads, r_.candidate, r_.run.eval, "correctness",
        [&](const PairedRunProgress& p) {
          if (progress_) progress_(p.phase, p.done, p.total);
        });
    for (const WorkloadVerdict& v : verdicts)
      if (!v.check.passed())
        e.failures.push_back(
            fmt::format("{}: {}: {}", v.workload, status_name(v.check.status), v.check.message));
    e.workloads = static_cast<int>(r_.workloads.size());
    if (on_stage_) on_stage_({"correctness", uuids(r_.workloads), nullptr, nullptr});
    if (e.failures.empty()) {
      replay(out);
      e.replay = out.evidence.replay;
    }
    out.decision = decide_first_candidate(e, r_.rules);
    return out;
  }

  const PromotionRequest& r_;
  const PromotionStageFn& on_stage_;
  const PromotionProgressFn& progress_;
  std::vector<PairedRun> runs_;  // the stages' runs (a callback's pointer is valid during it)
};

}  // namespace

PromotionOutcome run_promotion(const PromotionRequest& request, const PromotionStageFn& on_stage,
                               const PromotionProgressFn& progress) {
  if (request.workloads.empty()) fail("promotion of {}: no workloads", request.candidate.label);
  return Flow(request, on_stage, progress).run();
}

PairedGateResult run_representative_gate(const PromotionRequest& request,
                                         const PromotionStageFn& on_stage,
                                         const PromotionProgressFn& progress) {
  if (!request.retained) fail("a representative gate needs a retained candidate to gate against");
  return Flow(request, on_stage, progress).representative_gate();
}

}  // namespace kh
