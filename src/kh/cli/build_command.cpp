// `kh build CAND... [--param NAME=value]... [--cache DIR] [--jobs N] [--json]`: builds candidates
// into shared libraries through the content-addressed cache (in parallel), and reports per
// candidate whether it was built or found cached, its key and its library. A candidate may carry
// its own params as in kh sweep (folder@NAME=value,...), so the variants a sweep will judge can
// be compiled at once beforehand, into the cache the sweep then reads. A compile error prints
// the tail of the compiler's log and makes the exit status 1.
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "kh/build/builder.h"
#include "kh/cli/candidate_arg.h"
#include "kh/cli/commands.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"

namespace kh::cli {
namespace {

constexpr std::size_t kShortKey = 12;
constexpr std::size_t kLogTailLines = 40;

struct Options {
  std::vector<std::string> candidates;
  std::vector<std::string> params;
  std::string cache = ".kh/builds";
  int jobs = 0;
  std::string nvcc = "nvcc";
  std::string cxx = "c++";
  int timeout_s = 600;
  bool json = false;
};

std::string param_text(const ParamValues& params) {
  std::string text;
  for (const auto& [name, value] : params) text += (text.empty() ? "" : " ") + name + "=" + value;
  return text;
}

std::string log_tail(const std::string& log, std::size_t lines) {
  std::size_t pos = !log.empty() && log.back() == '\n' ? log.size() - 1 : log.size();
  for (std::size_t seen = 0; pos > 0;) {
    const auto nl = log.rfind('\n', pos - 1);
    if (nl == std::string::npos) break;
    if (++seen == lines) return log.substr(nl + 1);
    pos = nl;
  }
  return log;
}

// Each --param goes to the candidates that declare it; one no candidate declares is an error.
std::vector<std::string> overrides_for(const Candidate& c, const std::vector<std::string>& all,
                                       const std::vector<Candidate>& candidates) {
  std::vector<std::string> mine;
  for (const auto& o : all) {
    const std::string name = o.substr(0, o.find('='));
    auto declares = [&](const Candidate& k) {
      for (const auto& p : k.params)
        if (p.name == name) return true;
      return false;
    };
    if (declares(c) || std::none_of(candidates.begin(), candidates.end(), declares))
      mine.push_back(o);  // an undeclared one reaches resolve_params, which reports it
  }
  return mine;
}

void run(const Options& o) {
  std::vector<Candidate> candidates;
  std::vector<std::vector<std::string>> own;  // each argument's folder@ params
  for (const auto& arg : o.candidates) {
    auto [dir, params] = split_params(arg);
    candidates.push_back(load_candidate(dir));
    own.push_back(std::move(params));
  }
  std::vector<std::pair<const Candidate*, ParamValues>> requests;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    std::vector<std::string> params = own[i];  // --param on top, as in kh sweep
    for (auto& p : overrides_for(candidates[i], o.params, candidates)) params.push_back(p);
    requests.emplace_back(&candidates[i], resolve_params(candidates[i], params));
  }

  BuildOptions options;
  options.cache_dir = o.cache;
  options.jobs = o.jobs;
  options.nvcc = o.nvcc;
  options.cxx = o.cxx;
  options.timeout = std::chrono::seconds(o.timeout_s);
  const Builder builder(options);
  const std::vector<BuildResult> results = builder.build_all(requests);

  bool all_ok = true;
  Json report = Json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Candidate& c = candidates[i];
    const BuildResult& r = results[i];
    all_ok = all_ok && r.ok;
    if (o.json) {
      report.push_back({{"candidate", o.candidates[i]},
                        {"name", c.name},
                        {"definition", c.definition},
                        {"params", requests[i].second},
                        {"key", r.key},
                        {"ok", r.ok},
                        {"cached", r.cached},
                        {"seconds", r.seconds},
                        {"library", r.ok ? r.library.string() : ""},
                        {"command", r.command},
                        {"log", r.log}});
      continue;
    }
    const std::string params =
        requests[i].second.empty() ? "" : " [" + param_text(requests[i].second) + "]";
    const char* state = !r.ok ? "FAILED" : r.cached ? "cached" : "built";
    std::cout << fmt::format("{:<7} {}{}  {}  {:.1f} s", state, c.name, params,
                             r.key.substr(0, kShortKey), r.seconds);
    if (r.ok) std::cout << "  " << r.library.string();
    std::cout << "\n";
    if (!r.ok) {
      const std::string tail = log_tail(r.log, kLogTailLines);
      std::size_t start = 0;
      while (start < tail.size()) {
        const auto end = std::min(tail.find('\n', start), tail.size());
        std::cout << "  | " << tail.substr(start, end - start) << "\n";
        start = end + 1;
      }
    }
  }
  if (o.json) std::cout << report.dump(2) << "\n";
  if (!all_ok) set_exit_code(1);
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("build", "Build candidates into shared libraries (cached)");
  cmd->add_option("candidates", o->candidates,
                  "candidate folders or candidate.toml files (folder@NAME=value,... for params)")
      ->required();
  cmd->add_option("--param", o->params,
                  "NAME=value for a compile-time param (repeatable; applies to the candidates "
                  "that declare NAME; default: each param's first allowed value)");
  cmd->add_option("--cache", o->cache, "build cache folder")->capture_default_str();
  cmd->add_option("--jobs,-j", o->jobs, "parallel builds (0: hardware threads)")
      ->capture_default_str();
  cmd->add_option("--nvcc", o->nvcc, "CUDA compiler")->capture_default_str();
  cmd->add_option("--cxx", o->cxx, "C++ compiler for cpp candidates")->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s, "seconds one compile may take")->capture_default_str();
  cmd->add_flag("--json", o->json, "print the results as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
