#include "kh/ctl/round_brief.h"

#include <algorithm>

#include <fmt/format.h>

namespace kh::ctl {
namespace {

void contract(std::string& out, const RoundManifest& r, const BriefInputs& in) {
  const Definition& d = *in.definition;
  out += fmt::format("## The contract\n\n`{}` ({}): {}\n\n", d.name, d.op_type, d.description);
  out += fmt::format(
      "- The PyTorch reference in `{}` is the authority on semantics; kh checks every output "
      "against it within atol {:g}, rtol {:g} ({:g} % of the elements must match) on every "
      "workload, with fresh inputs, poisoned outputs and adversarial variants.\n",
      in.definition_path, in.tolerance.atol, in.tolerance.rtol,
      100 * in.tolerance.required_matched_ratio);
  out += "- Inputs:";
  for (const auto& t : d.inputs) out += fmt::format(" `{}`", t.name);
  out += "; outputs:";
  for (const auto& t : d.outputs) out += fmt::format(" `{}`", t.name);
  out += ".\n";
  out += fmt::format(
      "- Packaging: a candidate folder with `candidate.toml` ([solution] definition = \"{}\", "
      "[build] sources and entry, optional [params]) and its sources; the entry follows the C ABI "
      "of `include/kh/abi.h` (DLPack tensors in the definition's order, a stream, a workspace). "
      "No allocation, no host synchronisation, no caches keyed on pointers or exact shapes in the "
      "call path; the call must be CUDA-graph capturable.\n\n",
      r.definition);
}

void retained(std::string& out, const RoundManifest& r, const BriefInputs& in) {
  out += "## The retained candidate\n\n";
  if (r.retained.is_null()) {
    out += "None yet: the first candidate is judged on correctness and a high-trial replay.\n\n";
  } else {
    out += fmt::format("`{}` ({}), retained since {}: {}\n\n",
                       r.retained.value("name", std::string()),
                       r.retained.value("candidate", std::string()).substr(0, 12),
                       r.retained.value("since", std::string()),
                       r.retained.value("reason", std::string()));
  }
  if (in.regimes.empty()) return;
  out += fmt::format("Regimes of the official workloads{}:\n\n",
                     in.timing_method.empty()
                         ? std::string()
                         : fmt::format(" (the retained candidate's stored {} latencies)",
                                       in.timing_method));
  out += "| regime | workloads | share of latency | mean |\n| --- | ---: | ---: | ---: |\n";
  for (const auto& g : in.regimes)
    out += fmt::format("| {} | {} | {} | {} |\n", g.label, g.workloads,
                       g.retained_share ? fmt::format("{:.0f} %", 100 * *g.retained_share) : "-",
                       g.retained_mean_seconds
                           ? fmt::format("{:.2f} us", *g.retained_mean_seconds * 1e6)
                           : "-");
  out += "\n";
}

void state(std::string& out, const RoundManifest& r) {
  out += "## Profile and state\n\n";
  if (r.state.is_null()) {
    out += "No profile was given (kh state PROFILE.csv --json, then kh round start --state).\n\n";
    return;
  }
  if (r.state.contains("kernels") && r.state["kernels"].is_array()) {
    out += "| kernel | us | SM % | memory % | waves | registers | smem KB |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    auto num = [](const Json& k, const char* key, const char* format, double scale = 1) {
      return k.contains(key) && k[key].is_number()
                 ? fmt::format(fmt::runtime(format), k[key].get<double>() * scale)
                 : std::string("-");
    };
    for (const auto& k : r.state["kernels"]) {
      std::string name = k.value("name", std::string());
      name = name.substr(0, name.find('('));
      out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", name,
                         num(k, "duration_seconds", "{:.2f}", 1e6),
                         num(k, "sm_throughput_pct", "{:.0f}"),
                         num(k, "memory_throughput_pct", "{:.0f}"), num(k, "waves_per_sm", "{:.2f}"),
                         num(k, "registers_per_thread", "{:.0f}"),
                         num(k, "dynamic_smem_bytes", "{:.1f}", 1.0 / 1024));
    }
    out += "\n";
  }
  const Json& s = r.state.contains("state") ? r.state["state"] : r.state;
  out += fmt::format("State: **{}** in `{}`: {}.", s.value("bottleneck", std::string("unknown")),
                     s.value("dominant_kernel", std::string()), s.value("evidence", std::string()));
  if (s.contains("headroom") && s["headroom"].is_number())
    out += fmt::format(" Headroom: {:.2f}x the roofline floor.", s["headroom"].get<double>());
  out += "\n\n";
}

void direction(std::string& out, const RoundManifest& r, const BriefInputs& in) {
  out += "## This round's direction\n\n";
  if (r.direction.empty()) {
    out += "None: " + (in.choice ? in.choice->reason : std::string("no direction applies")) +
           ". Widen the search (another route or surface) or ask for a review.\n\n";
  } else {
    out += fmt::format("**{}**. Hypothesis: {}\n\n", r.direction, r.hypothesis);
    if (in.choice) out += "Why this one: " + in.choice->reason + "\n\n";
  }
  if (in.choice && !in.choice->skipped.empty()) {
    out += "Passed over:\n\n";
    for (const auto& s : in.choice->skipped) out += "- " + s + "\n";
    out += "\n";
  }
  out += "One hypothesis per round: change what the direction needs and nothing else.";
  if (!r.surfaces.empty()) {
    out += " Permitted surfaces:";
    for (const auto& s : r.surfaces) out += " `" + s + "`";
    out += ".";
  }
  out += "\n\n";
}

void history(std::string& out, const BriefInputs& in) {
  if (in.findings.empty()) return;
  out += "## The supervisor on earlier rounds\n\n";
  for (const auto& f : in.findings)
    out += fmt::format("- {} (rounds {}): {} Recommended: {}.\n", signal_name(f.signal),
                       fmt::join(f.rounds, ", "), f.reason, recommendation_name(f.recommendation));
  out += "\n";
}

// Continuation lines of a list item indented under it.
std::string list_item(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\n  ") : std::string(1, c);
  return out;
}

void reconnaissance(std::string& out, const RoundManifest& r, const BriefInputs& in) {
  out += "## Reconnaissance\n\n";
  const auto& notes = in.recorded_notes;
  if (!notes.empty()) {
    const std::size_t shown = std::min(notes.size(), kBriefNotesShown);
    out += fmt::format("Recorded with `kh note` ({}oldest first):\n\n",
                       shown < notes.size()
                           ? fmt::format("the newest {} of {}, `kh note {} --list` has all; ",
                                         shown, notes.size(), r.definition)
                           : std::string());
    for (std::size_t i = notes.size() - shown; i < notes.size(); ++i) {
      const BriefNote& n = notes[i];
      out += fmt::format("- {} ({}): {}", n.created_at.substr(0, 10), n.author, list_item(n.text));
      if (!n.reference.empty()) out += fmt::format(" — <{}>", n.reference);
      out += "\n";
    }
    out += "\n";
  }
  if (!in.notes.empty()) out += fmt::format("From `{}`:\n\n{}\n\n", in.notes_path, in.notes);
  if (notes.empty() && in.notes.empty()) out += "Nothing recorded yet.\n\n";
  out += fmt::format(
      "Read how DeepGEMM, FlashMLA, FlashInfer, fla and CUTLASS solve the problem before writing "
      "yours, and record what you learn (facts and numbers, not their code) with `kh note {0} "
      "\"TEXT\" --ref URL-or-path`. Run by `kh agent`, the store is out of your reach: write the "
      "notes to `$KH_OUT/notes.md` instead and kh agent records them.\n\n",
      r.definition);
}

void plan(std::string& out, const RoundManifest& r) {
  out += "## How the round is judged\n\n";
  out += fmt::format(
      "1. `kh eval CAND --backend cuda --trials 100` and the extra shapes "
      "(`tests/data/extra_shapes/{0}.jsonl`) under every `--variant`: correct everywhere first.\n"
      "2. `kh round submit {0} CAND... --promote \"--backend cuda --timing cupti\"`: kh promote "
      "gates each candidate against the retained one (paired, interleaved, against the noise "
      "floor) and replays the winner at 100 trials. With approval on (`--approve`, the default "
      "when a person is at the terminal) a promotion it grants waits as **pending** until a "
      "person answers it with `kh approve {0} ID` (or `--reject`); until then the retained "
      "candidate is unchanged and the round stays open.\n"
      "3. `kh round close {0}`: exactly one decision —\n"
      "   - **promote**: faster over the full distribution, no regime below the allowed loss, "
      "clean replay (and approved, where approval is on); it becomes the retained candidate;\n"
      "   - **archive**: a regime-local win kept for dispatch;\n"
      "   - **reject**: not faster, or slower somewhere it must not be;\n"
      "   - **failed**: no candidate could be judged (did not build, incorrect, crashed).\n"
      "A rejected or failed direction is not proposed again in the same state.\n",
      r.definition);
}

}  // namespace

std::string render_brief(const RoundManifest& r, const BriefInputs& in) {
  std::string out = fmt::format("# Round {} of `{}`\n\n", r.round, r.definition);
  contract(out, r, in);
  retained(out, r, in);
  state(out, r);
  direction(out, r, in);
  history(out, in);
  reconnaissance(out, r, in);
  plan(out, r);
  return out;
}

}  // namespace kh::ctl
