#include "kh/cli/candidate_arg.h"

#include "kh/core/error.h"
#include "kh/core/sha256.h"
#include "kh/run/builtin_candidates.h"
#include "kh/store/artifact_store.h"

namespace kh::cli {

std::pair<std::string, std::vector<std::string>> split_params(const std::string& arg) {
  const auto at = arg.rfind('@');
  if (at == std::string::npos || at == 0) return {arg, {}};
  std::vector<std::string> params;
  std::string rest = arg.substr(at + 1);
  for (std::size_t start = 0; start <= rest.size();) {
    const auto comma = rest.find(',', start);
    const std::string p = rest.substr(start, comma == std::string::npos ? comma : comma - start);
    if (p.find('=') == std::string::npos)
      fail("candidate '{}': '{}' after '@' is not NAME=value", arg, p);
    params.push_back(p);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return {arg.substr(0, at), params};
}

ResolvedCandidate resolve_candidate_arg(const std::string& arg,
                                        const std::vector<std::string>& params,
                                        const std::string& definition,
                                        const std::filesystem::path& cache) {
  ResolvedCandidate r;
  if (is_builtin_candidate(arg)) {
    if (definition.empty()) fail("{}: a builtin candidate needs --definition", arg);
    r.builtin = true;
    r.candidate.name = arg;
    r.candidate.definition = definition;
    r.candidate.entry.symbol = definition;
    r.build.ok = true;
    r.build.cached = true;
    r.build.key = "builtin";
    r.build.library = arg;
    return r;
  }
  auto [dir, own] = split_params(arg);
  r.candidate = load_candidate(dir);
  if (!definition.empty() && r.candidate.definition != definition)
    fail("{}: candidate '{}' is for definition {}, not {}", r.candidate.manifest.string(),
         r.candidate.name, r.candidate.definition, definition);
  own.insert(own.end(), params.begin(), params.end());
  r.params = resolve_params(r.candidate, own);
  BuildOptions build_options;
  build_options.cache_dir = cache;
  r.build = Builder(build_options).build(r.candidate, r.params);
  return r;
}

CandidateRecord candidate_record(ArtifactStore& store, const ResolvedCandidate& c) {
  if (c.builtin) {
    CandidateRecord r;
    r.hash = sha256_hex(c.candidate.name + "\n" + c.candidate.definition);
    r.name = c.candidate.name;
    r.definition = c.candidate.definition;
    r.created_at = utc_timestamp();
    store.put_candidate(r);
    return r;
  }
  const CandidateRecord r = record_candidate(store, c.candidate, c.params);
  // A compiler run is always kept; a cache hit only when the store has no build of that key yet
  // (a candidate's builds made on another machine arrive with its bundle).
  bool known = false;
  for (const auto& b : store.builds(r.hash)) known = known || b.key == c.build.key;
  if (!c.build.cached || !known) {
    BuildRecord b;
    b.candidate = r.hash;
    b.key = c.build.key;
    b.ok = c.build.ok;
    b.cached = c.build.cached;
    if (!c.build.log.empty()) b.log_blob = store.put_blob(c.build.log);
    b.seconds = c.build.seconds;
    store.put_build(b);
  }
  return r;
}

void check_backend_fits(const ResolvedCandidate& c, const std::string& backend) {
  if (!c.builtin && c.candidate.language == "cuda" && backend == "cpu")
    fail("{}: {} is a CUDA candidate; the cpu backend would hand it host memory: pass "
         "--backend cuda (on a machine with an NVIDIA GPU)",
         c.candidate.manifest.string(), c.candidate.name);
}

}  // namespace kh::cli
