// `kh profile CAND -w UUID|INDEX`: one call of a candidate on one workload, seen two ways.
//   1. Its timeline through CUPTI, in a worker: the candidate timed as kh eval --timing cupti
//      does (official warmup, L2 flushed), and the last timed call's kernels, copies and fills
//      with start, duration and share of the call's span (gaps count in the span).
//   2. Nsight Compute on a worker for that call (`ncu --clock-control none --metrics <kh state
//      --metrics>` over `kh eval CAND -w W --trials 1 --official`), the launches of the
//      timeline's kernels kept (the last ones: the reference's kernels and earlier calls are not
//      the candidate's call), parsed as kh state parses them, and the bottleneck state.
// With ncu missing or unable to read counters, the timeline still comes out and the message says
// why. --out DIR keeps profile.json and ncu.csv (what kh state and kh round start read). The
// profile is also recorded in the store (its files as blobs; --no-store skips it), where kh round
// start --profile takes its state from; --record DIR records one made elsewhere (a GPU machine's
// --out folder) without profiling, and --list shows the stored ones.
#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>

#include <iostream>

#include <fmt/format.h>

#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/cli/eval_options.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "kh/ctl/bottleneck_state.h"
#include "kh/ctl/ncu_csv.h"
#include "kh/gen/stream_key.h"
#include "kh/gpu/timing_config.h"
#include "kh/run/worker_client.h"
#include "kh/spec/dataset.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kWorkerTimeout = 120s;
constexpr auto kNcuTimeout = 600s;  // a few replayed launches of one call

struct Options {
  std::string candidate, definition, workload, workloads_file, ncu = "ncu", out, cache = ".kh/builds";
  std::string root = ".";
  std::vector<std::string> params;
  std::string record;  // --record DIR: a profile folder made elsewhere
  double floor_us = 0;
  int device = 0;
  bool no_ncu = false, json = false, no_store = false, list = false;
  StoreOptions store;
};

// Records a profile (profile.json as written, ncu.csv when Nsight Compute ran) in the store:
// the files as blobs, the row for listing and for kh round start --profile. Returns its id.
std::string store_profile(const Options& o, const ResolvedCandidate& c, const Json& profile,
                          const std::string& ncu_csv, const std::string& where) {
  const Json& state = profile.value("state", Json());
  if (!state.is_object() || !state.contains("bottleneck") || !state.contains("signature"))
    fail("{}: state: expected kh profile's state with bottleneck and signature", where);
  auto store = open_store(o.store);
  ProfileRecord r;
  r.definition = profile.at("definition").get<std::string>();
  r.candidate = candidate_record(*store, c).hash;
  r.workload = profile.at("workload").get<std::string>();
  r.gpu = profile.value("environment", Json::object()).value("gpu", std::string());
  r.span_seconds = profile.value("span_seconds", 0.0);
  r.bottleneck = state.at("bottleneck").get<std::string>();
  r.signature = state.at("signature").get<std::string>();
  r.profile_blob = store->put_blob(profile.dump(2) + "\n");
  if (!ncu_csv.empty()) r.ncu_blob = store->put_blob(ncu_csv);
  return store->put_profile(r);
}

// --list: the store's profiles, newest first.
void list_profiles(const Options& o) {
  auto store = open_store(o.store);
  const auto profiles = store->profiles(o.definition);
  if (o.json) {
    Json rows = Json::array();
    for (const auto& p : profiles) {
      const auto c = store->candidate(p.candidate);
      rows.push_back({{"id", p.id},
                      {"definition", p.definition},
                      {"candidate", p.candidate},
                      {"candidate_name", c ? c->name : ""},
                      {"workload", p.workload},
                      {"gpu", p.gpu},
                      {"span_seconds", p.span_seconds},
                      {"bottleneck", p.bottleneck},
                      {"signature", p.signature},
                      {"has_ncu", !p.ncu_blob.empty()},
                      {"created_at", p.created_at}});
    }
    std::cout << rows.dump(2) << "\n";
    return;
  }
  if (profiles.empty()) {
    std::cout << "no stored profiles" << (o.definition.empty() ? "" : " of " + o.definition)
              << " (kh profile CAND -w W records one)\n";
    return;
  }
  std::cout << fmt::format("{:<12}  {:<20}  {:<24}  {:<36}  {:>9}  {}\n", "id", "created",
                           "candidate", "workload", "span us", "state");
  for (const auto& p : profiles) {
    const auto c = store->candidate(p.candidate);
    std::cout << fmt::format("{:<12}  {:<20}  {:<24}  {:<36}  {:>9.2f}  {}{}\n", p.id.substr(0, 12),
                             p.created_at.substr(0, 19),
                             ((c ? c->name : std::string("?")) + " " + p.candidate.substr(0, 8))
                                 .substr(0, 24),
                             p.workload, p.span_seconds * 1e6, p.signature,
                             p.ncu_blob.empty() ? " (timeline only)" : "");
  }
}

// CUPTI names kernels by their mangled symbol; people and ncu's -k read the function's own name.
std::string demangled(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

// "void ns::kernel<1, 2>(Args, int)" -> "kernel", as ncu's function name base has it.
std::string kernel_base_name(const std::string& name) {
  std::string base = demangled(name);
  base = base.substr(0, base.find('('));
  base = base.substr(0, base.find('<'));
  if (const auto space = base.rfind(' '); space != std::string::npos) base = base.substr(space + 1);
  if (const auto scope = base.rfind("::"); scope != std::string::npos) base = base.substr(scope + 2);
  return base;
}

// The worker's timeline of one cupti-timed call.
Json timeline(const Options& o, const ResolvedCandidate& c, const Definition& def,
              const Workload& w, const fs::path& log) {
  WorkerClient worker({self_executable(), "worker", "--backend", "cuda", "--device",
                       std::to_string(o.device)},
                      log);
  worker.start(kWorkerTimeout);
  const auto ask = [&](Json request) {
    const WorkerReply r = worker.request(std::move(request), kWorkerTimeout, kWorkerTimeout);
    if (r.kind != WorkerReply::Kind::kReply) fail("kh profile: the worker: {}\n{}", r.detail, worker.log_tail());
    if (!r.body.value("ok", false)) fail("kh profile: the worker: {}", r.body.value("error", ""));
    return r.body;
  };
  ask({{"op", "load"},
       {"library", c.build.library.string()},
       {"entry", c.candidate.entry.symbol},
       {"root", fs::absolute(o.root).string()}});
  const TimingConfig counts = official_timing_config(def.name);
  const Json reply = ask({{"op", "time"},
                          {"root", fs::absolute(o.root).string()},
                          {"definition", def.name},
                          {"workload", w.uuid},
                          {"workload_json", w.to_json()},
                          {"trial", 0},
                          {"seed", kDefaultSeed},
                          {"variant", ""},
                          {"method", "cupti"},
                          {"warmup", counts.warmup},
                          {"iterations", 3},
                          {"timeline", true}});
  worker.stop();
  if (!reply.value("error", std::string()).empty())
    fail("kh profile: the timed call failed: {}", reply["error"].get<std::string>());
  return reply;
}

// ncu over one kh eval of the workload; "" and the reason when it cannot run.
std::pair<std::string, std::string> run_ncu(const Options& o, const std::string& definition,
                                            const std::string& kernels_regex,
                                            const std::string& workload_index) {
  std::string metrics;
  for (const auto& m : ctl::kNcuMetrics) metrics += (metrics.empty() ? "" : ",") + m;
  const ProcessResult r = run_process(
      {o.ncu, "--clock-control", "none", "--target-processes", "all", "--csv", "--metrics", metrics,
       "-k", "regex:" + kernels_regex, self_executable(), "eval", o.candidate, "--definition",
       definition, "-w", workload_index, "--backend", "cuda", "--trials", "1", "--official",
       "--no-store", "--root", o.root, "--cache", o.cache},
      kNcuTimeout, ProcessOptions{{}, {}, {}, {{"KH_MEMORY_DIR", ""}}});
  if (r.output.find("\"ID\",") != std::string::npos) return {r.output, ""};
  std::string why = r.output.substr(r.output.size() > 1500 ? r.output.size() - 1500 : 0);
  if (r.exit_code == 127) why = o.ncu + " is not installed or not on PATH";
  return {"", fmt::format("Nsight Compute gave no metrics (exit {}): {}", r.exit_code, why)};
}

void run(const Options& o) {
  if (o.list) {
    list_profiles(o);
    return;
  }
  if (o.candidate.empty() || o.workload.empty())
    fail("kh profile: give a candidate folder and -w WORKLOAD (or --list)");
  const Dataset ds = Dataset::open(o.root);
  const ResolvedCandidate c = resolve_candidate_arg(o.candidate, o.params, o.definition, o.cache);
  if (!c.build.ok) fail("kh profile {}: the build failed:\n{}", o.candidate, c.build.log);
  const Definition& def = ds.definition(c.candidate.definition);
  const auto picked =
      pick_workloads(select_workloads(ds, def, o.workloads_file), {o.workload}, def.name);
  const Workload& w = picked.at(0).second;
  const std::string index = std::to_string(picked.at(0).first);
  if (!o.record.empty()) {
    const fs::path dir(o.record);
    const fs::path file = dir / "profile.json";
    const Json profile = read_json_file(file);
    for (const auto& [field, expected] :
         {std::pair<std::string, std::string>{"definition", def.name}, {"workload", w.uuid}})
      if (profile.value(field, std::string()) != expected)
        fail("{}: {}: {} is not {} (the candidate's definition and -w {})", file.string(), field,
             profile.value(field, Json()).dump(), expected, o.workload);
    const fs::path csv = dir / "ncu.csv";
    const std::string id = store_profile(o, c, profile, fs::exists(csv) ? read_text_file(csv) : "",
                                         file.string());
    if (o.json)
      std::cout << Json{{"profile", id}, {"recorded", file.string()}}.dump(2) << "\n";
    else
      std::cout << fmt::format("recorded {} as profile {}\n", file.string(), id.substr(0, 12));
    return;
  }
  const fs::path out = o.out.empty() ? fs::temp_directory_path() / fmt::format("kh-profile-{}", getpid())
                                     : fs::path(o.out);
  fs::create_directories(out);

  const Json timed = timeline(o, c, def, w, out / "worker.log");
  const Json& activities = timed["timeline"];
  double span = 0;
  std::vector<std::string> names;
  for (const auto& a : activities) {
    span = std::max(span, a["start_seconds"].get<double>() + a["duration_seconds"].get<double>());
    if (a["kind"] == "kernel") names.push_back(kernel_base_name(a["name"].get<std::string>()));
  }
  if (activities.empty()) fail("kh profile: the timed call recorded no GPU activity");

  ctl::CallProfile call;
  call.span_seconds = span;
  std::string ncu_error, ncu_csv;
  if (o.no_ncu) {
    ncu_error = "--no-ncu";
  } else {
    std::string regex;
    for (const auto& n : names) regex += (regex.empty() ? "" : "|") + n;
    const auto [csv, why] = run_ncu(o, def.name, "^(" + regex + ")$", index);
    ncu_error = why;
    ncu_csv = csv;
    if (!csv.empty()) {
      write_text_file_atomic(out / "ncu.csv", csv);
      const auto launches = ctl::parse_ncu_csv(csv, (out / "ncu.csv").string());
      // The candidate's call is the last run of its kernels in the eval.
      const std::size_t n = std::min(names.size(), launches.size());
      call.kernels.assign(launches.end() - static_cast<std::ptrdiff_t>(n), launches.end());
    }
  }
  if (call.kernels.empty())  // the timeline's durations alone
    for (const auto& a : activities)
      if (a["kind"] == "kernel") {
        ctl::KernelProfile k;
        k.name = demangled(a["name"].get<std::string>());
        k.duration_seconds = a["duration_seconds"].get<double>();
        call.kernels.push_back(k);
      }
  std::optional<double> floor;
  if (o.floor_us > 0) floor = o.floor_us * 1e-6;
  const ctl::BottleneckState state = ctl::classify(call, floor, std::nullopt);

  Json kernels = Json::array();
  for (const auto& k : call.kernels) {
    Json j = {{"name", k.name}, {"duration_seconds", k.duration_seconds}};
    for (const auto& [metric, value] : k.raw) j["metrics"][metric] = value;
    kernels.push_back(j);
  }
  Json result = {{"candidate", o.candidate},
                 {"definition", def.name},
                 {"workload", w.uuid},
                 {"span_seconds", span},
                 {"timeline", activities},
                 {"environment", timed.value("environment", Json::object())},
                 {"ncu", ncu_error.empty() ? Json((out / "ncu.csv").string()) : Json(nullptr)},
                 {"ncu_error", ncu_error},
                 {"kernels", kernels},
                 {"state",
                  {{"dominant_kernel", state.dominant_kernel},
                   {"dominant_share", state.dominant_share},
                   {"bottleneck", ctl::bottleneck_name(state.bottleneck)},
                   {"evidence", state.evidence},
                   {"headroom", state.headroom ? Json(*state.headroom) : Json(nullptr)},
                   {"signature", state.signature()}}}};
  write_text_file_atomic(out / "profile.json", result.dump(2) + "\n");
  const std::string stored =
      o.no_store ? "" : store_profile(o, c, result, ncu_csv, (out / "profile.json").string());
  if (!stored.empty()) result["stored_profile"] = stored;
  if (o.json) {
    std::cout << result.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{} on {} ({}), one call, cupti: span {:.2f} us\n", c.candidate.name,
                           def.name, w.uuid, span * 1e6);
  std::cout << fmt::format("  {:<40} {:>10} {:>10} {:>7}\n", "activity", "start us", "us", "share");
  for (const auto& a : activities)
    std::cout << fmt::format("  {:<40} {:>10.2f} {:>10.2f} {:>6.0f}%\n",
                             (a["kind"] == "kernel" ? kernel_base_name(a["name"].get<std::string>())
                                                    : a["kind"].get<std::string>())
                                 .substr(0, 40),
                             a["start_seconds"].get<double>() * 1e6,
                             a["duration_seconds"].get<double>() * 1e6,
                             100 * a["duration_seconds"].get<double>() / span);
  if (!ncu_error.empty()) std::cout << "Nsight Compute: not used: " << ncu_error << "\n";
  std::cout << fmt::format("state: {} in {}: {}\n", ctl::bottleneck_name(state.bottleneck),
                           state.dominant_kernel, state.evidence);
  std::cout << "written: " << (out / "profile.json").string()
            << (ncu_error.empty() ? " and " + (out / "ncu.csv").string() : "") << "\n";
  if (!stored.empty())
    std::cout << fmt::format("stored as profile {} (kh round start {} --profile latest)\n",
                             stored.substr(0, 12), def.name);
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "profile", "One call's CUPTI timeline and Nsight Compute metrics, and its bottleneck state");
  cmd->add_option("candidate", o->candidate, "candidate folder (folder@NAME=value)");
  cmd->add_option("--workload,-w", o->workload, "the workload (uuid or index)");
  cmd->add_option("--definition,-d", o->definition, "the definition (default: the candidate's)");
  cmd->add_option("--workloads", o->workloads_file, "workloads JSONL file (default: the dataset's)");
  cmd->add_option("--param", o->params, "compile-time parameter NAME=value (repeatable)");
  cmd->add_option("--root,--dataset", o->root, "dataset folder")->capture_default_str();
  cmd->add_option("--cache", o->cache, "build cache folder")->capture_default_str();
  cmd->add_option("--device", o->device, "CUDA device")->capture_default_str();
  cmd->add_option("--ncu", o->ncu, "the Nsight Compute CLI")->capture_default_str();
  cmd->add_flag("--no-ncu", o->no_ncu, "the timeline alone");
  cmd->add_option("--floor-us", o->floor_us, "the workload's roofline floor, for the headroom");
  cmd->add_option("--out", o->out, "folder for profile.json and ncu.csv (default: a temporary one)");
  cmd->add_option("--record", o->record,
                  "record this folder's profile.json (and ncu.csv) in the store instead of profiling");
  cmd->add_flag("--list", o->list, "the store's profiles (of --definition), newest first");
  cmd->add_flag("--no-store", o->no_store, "do not record the profile in the store");
  add_store_option(cmd, o->store);
  cmd->add_flag("--json", o->json, "print as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
