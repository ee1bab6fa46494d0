#include "kh/cli/store_access.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "kh/build/kh_home.h"
#include "kh/core/error.h"
#include "kh/store/bundle.h"

namespace kh::cli {

void add_store_option(CLI::App* cmd, StoreOptions& o) {
  cmd->add_option("--store", o.dir, "store folder (store.db and blobs/)")->capture_default_str();
}

std::unique_ptr<ArtifactStore> open_store(const StoreOptions& o) {
  auto store = std::make_unique<ArtifactStore>(StoreLocation{o.dir});
  std::filesystem::path memory;
  if (const char* env = std::getenv("KH_MEMORY_DIR")) {
    memory = env;
  } else {
    try {
      memory = kh_home() / "memory";
    } catch (const Error&) {  // a kh binary away from its source tree has no memory/ to import
    }
  }
  if (!memory.empty() && std::filesystem::is_directory(memory)) {
    const int imported = import_memory_dir(*store, memory);
    if (imported)
      std::cerr << fmt::format("kh: imported {} memory bundle{} from {}\n", imported,
                               imported == 1 ? "" : "s", memory.string());
  }
  return store;
}

CandidateRecord resolve_candidate(const ArtifactStore& store, const std::string& name_or_hash) {
  const auto found = store.find_candidates(name_or_hash);
  if (found.empty())
    fail("no candidate named '{}' (or with a hash starting so) in the store; see kh history",
         name_or_hash);
  std::set<std::string> names;
  for (const auto& c : found) names.insert(c.name);
  if (found.size() > 1 && found[0].name != name_or_hash) {
    std::string list;
    for (const auto& c : found) list += fmt::format("\n  {} {}", c.hash.substr(0, 12), c.name);
    fail("'{}' matches {} candidates; give more of a hash:{}", name_or_hash, found.size(), list);
  }
  return found[0];  // newest of that name: the latest version of a candidate
}

std::string newest_sweep_of(const ArtifactStore& store, const CandidateRecord& c) {
  for (const auto& s : store.sweeps(c.definition))
    for (const auto& h : s.candidates)
      if (h == c.hash) return s.id;
  return "";
}

std::vector<EvaluationRecord> latest_per_workload(const ArtifactStore& store,
                                                  const CandidateRecord& c,
                                                  const std::string& sweep) {
  std::string from = sweep.empty() ? newest_sweep_of(store, c) : sweep;
  std::vector<EvaluationRecord> all;
  if (from.empty() || from == "all") {
    all = store.evaluations_of_candidate(c.hash);
  } else {
    for (auto& e : store.evaluations_of_sweep(from))
      if (e.candidate == c.hash) all.push_back(std::move(e));
  }
  std::map<std::string, EvaluationRecord> newest;
  for (auto& e : all) {
    auto it = newest.find(e.workload);
    if (it == newest.end() || e.created_at > it->second.created_at ||
        (e.created_at == it->second.created_at && e.attempt > it->second.attempt))
      newest[e.workload] = std::move(e);
  }
  std::vector<EvaluationRecord> out;
  for (auto& [uuid, e] : newest) out.push_back(std::move(e));
  return out;
}

CandidateResults candidate_results(const ArtifactStore& store, const CandidateRecord& c,
                                   const std::vector<EvaluationRecord>& evaluations) {
  std::set<std::string> flaky;
  std::set<std::string> sweeps;
  for (const auto& e : evaluations)
    if (!e.sweep.empty()) sweeps.insert(e.sweep);
  for (const auto& s : sweeps)
    for (const auto& item : store.sweep_items(s))
      if (item.candidate == c.hash && item.flaky) flaky.insert(item.workload);
  CandidateResults r;
  r.name = c.name;
  r.hash = c.hash;
  for (const auto& e : evaluations) {
    WorkloadResult w;
    w.workload = e.workload;
    w.status = e.status;
    if (e.summary) w.latency = e.summary->latency;
    w.fraction_of_floor = e.fraction_of_floor;
    w.flaky = flaky.count(e.workload) > 0;
    r.workloads.push_back(std::move(w));
  }
  return r;
}

}  // namespace kh::cli
