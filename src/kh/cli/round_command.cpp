// `kh round start|resume|submit|close D`: one bounded round of the optimisation loop, as files
// under rounds/<D>/<NNN>/ (ctl/round_manifest.h) that survive a kill and that a coding agent or a
// person drives (the steps: round_steps.h):
//   start   the state (kh state --json of a profile), the direction the knowledge base proposes
//           for it given the closed rounds (or --direction), the supervisor's findings, and
//           brief.md (ctl/round_brief.h); refused while the last round is open;
//   resume  where the open round stands and the next step (an interrupted submission: the command
//           to rerun);
//   submit  kh promote on the candidates against the retained one, its decisions recorded; with
//           --approve (the default at a terminal) a promotion it grants waits for kh approve;
//   close   exactly one decision: the best submitted one, or --decision (failed when nothing could
//           be judged); a pending promotion counts as a person answered it, and until one has,
//           the round stays open.
#include <iostream>

#include "kh/cli/commands.h"
#include "kh/cli/round_steps.h"

namespace kh::cli {
namespace {

using Options = RoundOptions;

void print(const Options& o, const RoundStep& step) {
  if (o.json)
    std::cout << ctl::round_manifest_json(step.manifest).dump(2) << "\n";
  else
    std::cout << step.summary;
}

void common(CLI::App* cmd, Options& o) {
  cmd->add_option("definition", o.definition, "the definition")->required();
  cmd->add_option("--rounds-dir", o.rounds_dir, "where rounds live")->capture_default_str();
  cmd->add_flag("--json", o.json, "print the round's manifest as JSON");
}

}  // namespace

void add_round_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* round = app.add_subcommand(
      "round", "One round of the optimisation loop: start, resume, submit candidates, close");
  round->require_subcommand(1);

  auto* s = round->add_subcommand("start", "Open the next round: state, direction, brief.md");
  common(s, *o);
  s->add_option("--state", o->state_file, "kh state PROFILE.csv --json output of the retained candidate");
  s->add_option("--profile", o->profile,
                "a stored kh profile instead of --state: latest (the retained candidate's newest) "
                "or an id prefix");
  s->add_option("--direction", o->direction, "take this knowledge-base direction instead");
  s->add_option("--knowledge", o->knowledge, "knowledge base (default: knowledge/ of the family)");
  s->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  add_store_option(s, o->store);
  s->callback([o] { print(*o, start_round(*o)); });

  auto* r = round->add_subcommand("resume", "Where the last round stands and the next step");
  common(r, *o);
  add_store_option(r, o->store);
  r->callback([o] { print(*o, resume_round(*o)); });

  auto* u = round->add_subcommand(
      "submit", "Gate candidates against the retained one (kh promote, options in --promote)");
  common(u, *o);
  u->add_option("candidates", o->candidates, "candidate folders");
  u->add_option("--promote", o->promote_options,
                "kh promote's options, one string split into words as a shell would (\"--backend cuda --fix 'a race'\")");
  add_approval_flags(u, o->approval);
  add_store_option(u, o->store);
  u->callback([o] { print(*o, submit_round(*o)); });

  auto* c = round->add_subcommand("close", "Record exactly one decision and close the round");
  common(c, *o);
  c->add_option("--decision", o->decision, "promote, archive, reject or failed");
  c->add_option("--note", o->note, "why, for whoever reads the history");
  add_store_option(c, o->store);
  c->callback([o] { print(*o, close_round(*o)); });
}

}  // namespace kh::cli
