#include "kh/build/builder.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <signal.h>
#include <unistd.h>

#include "kh/abi.h"
#include "kh/build/kh_home.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "kh/core/sha256.h"

namespace kh {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Bump when the way a key is formed changes, so old cache entries are no longer found.
constexpr const char* kKeyFormat = "kh-build-key/1";
constexpr std::chrono::seconds kVersionTimeout{60};

const std::vector<std::string> kCudaBaseFlags = {
    "-shared", "-Xcompiler", "-fPIC", "-std=c++17", "-O3", "-lineinfo", "--expt-relaxed-constexpr"};
const std::vector<std::string> kCppBaseFlags = {"-shared", "-fPIC", "-std=c++17", "-O2"};

const std::vector<std::string>& base_flags(const std::string& language) {
  return language == "cuda" ? kCudaBaseFlags : kCppBaseFlags;
}

// Length-prefixed fields, so no two different inputs hash the same byte stream.
void add_field(Sha256& hash, std::string_view name, std::string_view value) {
  hash.update(name).update(std::string_view("\0", 1));
  hash.update(std::to_string(value.size())).update(std::string_view("\0", 1)).update(value);
}

// The ABI header the candidate compiles against must be the one this kh was built with.
std::string checked_abi_header() {
  const fs::path header = kh_abi_header();
  const std::string text = read_text_file(header);
  static const std::regex kVersion("#define\\s+KH_ABI_VERSION\\s+([0-9]+)");
  std::smatch match;
  if (!std::regex_search(text, match, kVersion))
    fail("{}: no \"#define KH_ABI_VERSION\" found", header.string());
  if (std::stoi(match[1].str()) != KH_ABI_VERSION)
    fail("{}: KH_ABI_VERSION is {}, but this kh was built for version {}", header.string(),
         match[1].str(), KH_ABI_VERSION);
  return text;
}

// What a build leaves for the worker to load: the shared library, or a Python candidate's manifest.
const char* library_file(const std::string& language) {
  return is_python_language(language) ? kPythonCandidateManifest : kCandidateLibrary;
}

bool entry_complete(const fs::path& entry, const std::string& language) {
  std::error_code ec;
  return fs::is_regular_file(entry / library_file(language), ec) &&
         fs::is_regular_file(entry / "build.json", ec);
}

// A Python candidate is not compiled: its sources are copied into the cache entry (so a later
// edit of the folder cannot change what was evaluated) with a manifest the Python worker reads.
void stage_python_candidate(const Candidate& c, const ParamValues& params, const fs::path& tmp) {
  for (const auto& s : c.sources) {
    fs::create_directories((tmp / s).parent_path());
    fs::copy_file(c.dir / s, tmp / s);
  }
  const Json manifest = {{"name", c.name},
                         {"definition", c.definition},
                         {"language", c.language},
                         {"entry_file", c.entry.file},
                         {"function", c.entry.symbol},
                         {"destination_passing_style", c.destination_passing_style},
                         {"params", params}};
  write_text_file_atomic(tmp / kPythonCandidateManifest, manifest.dump(2) + "\n");
}

// Temporary folders left by killed builds of this key (their pid is gone) are removed.
void remove_abandoned(const fs::path& cache_dir, const std::string& key) {
  std::error_code ec;
  const std::string prefix = key + ".tmp.";
  for (const auto& item : fs::directory_iterator(cache_dir, ec)) {
    const std::string name = item.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      fs::remove_all(item.path(), ec);
  }
}

std::string status_line(const ProcessResult& p) {
  if (p.timed_out) return fmt::format("[kh: compiler killed after {:.0f} s: timeout]", p.seconds);
  if (p.signal != 0) return fmt::format("[kh: compiler killed by signal {}]", p.signal);
  return fmt::format("[kh: compiler exited with status {}]", p.exit_code);
}

std::string first_line(const std::string& text) {
  std::string last;
  for (std::size_t start = 0; start < text.size();) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    if (!line.empty()) last = line;  // nvcc's last line names the release
    start = end + 1;
  }
  return last;
}

}  // namespace

struct Builder::IdentityCache {
  std::mutex mutex;
  std::map<std::string, std::string> by_language;
};

std::optional<fs::path> find_nvcc() {
  if (auto p = find_program("nvcc")) return p;
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* dir = std::getenv(env); dir != nullptr && *dir != '\0')
      if (auto p = find_program((fs::path(dir) / "bin/nvcc").string())) return p;
  return find_program("/usr/local/cuda/bin/nvcc");
}

Builder::Builder(BuildOptions options)
    : options_(std::move(options)), identities_(std::make_shared<IdentityCache>()) {
  options_.cache_dir = fs::absolute(options_.cache_dir).lexically_normal();
  if (options_.nvcc == "nvcc" && !find_program("nvcc"))
    if (auto p = find_nvcc()) options_.nvcc = p->string();
}

const std::string& Builder::compiler_for(const std::string& language) const {
  if (language == "cuda") return options_.nvcc;
  if (language == "cpp") return options_.cxx;
  fail("no compiler for language \"{}\" (expected \"cuda\" or \"cpp\")", language);
}

std::string Builder::compiler_identity(const std::string& language) const {
  const std::string& compiler = compiler_for(language);
  std::lock_guard lock(identities_->mutex);
  auto it = identities_->by_language.find(language);
  if (it == identities_->by_language.end()) {
    const ProcessResult p = run_process({compiler, "--version"}, kVersionTimeout);
    const auto resolved = find_program(compiler);
    const std::string identity =
        fmt::format("{}\n{}\nexit {} signal {}\n{}", compiler,
                    resolved ? resolved->string() : std::string("(not found)"), p.exit_code,
                    p.signal, p.output);
    it = identities_->by_language.emplace(language, identity).first;
  }
  return it->second;
}

std::string Builder::cache_key(const Candidate& c, const ParamValues& params) const {
  check_params(c, params);
  Sha256 hash;
  add_field(hash, "format", kKeyFormat);
  add_field(hash, "abi_version", std::to_string(KH_ABI_VERSION));
  add_field(hash, "abi.h", checked_abi_header());
  add_field(hash, "dlpack.h", read_text_file(kh_include_dirs().at(1) / "dlpack/dlpack.h"));
  add_field(hash, "language", c.language);
  for (const auto& f : base_flags(c.language)) add_field(hash, "base_flag", f);
  add_field(hash, "entry", c.entry.text());
  std::vector<std::string> sources = c.sources;
  std::sort(sources.begin(), sources.end());
  for (const auto& s : sources) {
    add_field(hash, "source", s);
    add_field(hash, "content", read_text_file(c.dir / s));
  }
  for (const auto& f : c.flags) add_field(hash, "flag", f);
  for (const auto& t : c.targets) add_field(hash, "target", t);
  for (const auto& [name, value] : params) add_field(hash, "param", name + "=" + value);
  if (is_python_language(c.language)) {
    // The manifest written into the entry names the candidate and its definition.
    add_field(hash, "destination_passing_style", c.destination_passing_style ? "1" : "0");
    add_field(hash, "name", c.name);
    add_field(hash, "definition", c.definition);
  } else {
    add_field(hash, "compiler", compiler_identity(c.language));
  }
  return hash.hex_digest();
}

std::vector<std::string> Builder::command(const Candidate& c, const ParamValues& params,
                                          const fs::path& output) const {
  std::vector<std::string> cmd = {compiler_for(c.language)};
  const auto& base = base_flags(c.language);
  cmd.insert(cmd.end(), base.begin(), base.end());
  for (std::size_t i = 0; i < c.targets.size(); ++i)
    cmd.push_back(cuda_gencode_flag(c.targets[i], fmt::format("{}: targets[{}]", c.name, i)));
  cmd.push_back("-I" + c.dir.string());
  for (const auto& dir : kh_include_dirs()) cmd.push_back("-I" + dir.string());
  for (const auto& [name, value] : params) cmd.push_back("-D" + name + "=" + value);
  cmd.insert(cmd.end(), c.flags.begin(), c.flags.end());
  for (const auto& s : c.sources)
    if (is_compiled_source(c.language, s)) cmd.push_back(s);  // relative: the compiler runs in dir
  cmd.push_back("-o");
  cmd.push_back(output.string());
  return cmd;
}

BuildResult Builder::build(const Candidate& c, const ParamValues& params) const {
  return build_with_key(c, params, cache_key(c, params));
}

BuildResult Builder::build_with_key(const Candidate& c, const ParamValues& params,
                                    const std::string& key) const {
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  BuildResult r;
  r.key = key;
  const fs::path entry = options_.cache_dir / key;

  bool unreadable_entry = false;
  const char* library = library_file(c.language);
  if (entry_complete(entry, c.language)) {
    try {
      const Json info = read_json_file(entry / "build.json");
      r.command = info.at("command").get<std::vector<std::string>>();
      std::error_code ec;
      if (fs::exists(entry / "build.log", ec)) r.log = read_text_file(entry / "build.log");
      r.ok = r.cached = true;
      r.library = entry / library;
      r.seconds = elapsed();
      return r;
    } catch (const std::exception&) {
      unreadable_entry = true;  // build again and replace the entry
    }
  }

  static std::atomic<int> counter{0};
  fs::create_directories(options_.cache_dir);
  remove_abandoned(options_.cache_dir, key);
  const fs::path tmp = options_.cache_dir /
                       fmt::format("{}.tmp.{}.{}", key, static_cast<long>(::getpid()), counter++);
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  ProcessResult p;
  if (is_python_language(c.language)) {
    stage_python_candidate(c, params, tmp);
    p.exit_code = 0;
    p.output = "[kh: a " + c.language + " candidate is not compiled; its sources were copied]\n";
  } else {
    r.command = command(c, params, tmp / kCandidateLibrary);
    p = run_process(r.command, options_.timeout, c.dir);
  }
  r.log = p.output;
  r.seconds = elapsed();
  std::error_code ec;
  if (!p.ok() || !fs::is_regular_file(tmp / library, ec)) {
    if (!r.log.empty() && r.log.back() != '\n') r.log += '\n';
    r.log +=
        p.ok() ? fmt::format("[kh: the compiler wrote no {}]", kCandidateLibrary) : status_line(p);
    r.log += '\n';
    fs::remove_all(tmp, ec);
    return r;
  }

  if (cache_key(c, params) != key) {
    // A source changed while it compiled: the library may not match the key it would be filed
    // under.
    r.log += "[kh: the sources changed during the build; build again]\n";
    fs::remove_all(tmp, ec);
    return r;
  }

  Json sources = Json::array();
  for (const auto& s : c.sources)
    sources.push_back({{"path", s}, {"sha256", sha256_hex(read_text_file(c.dir / s))}});
  const bool python = is_python_language(c.language);
  const std::string identity = python ? "" : compiler_identity(c.language);
  const Json info = {{"key", key},
                     {"candidate", c.name},
                     {"definition", c.definition},
                     {"dir", c.dir.string()},
                     {"language", c.language},
                     {"entry", c.entry.text()},
                     {"sources", sources},
                     {"flags", c.flags},
                     {"targets", c.targets},
                     {"params", params},
                     {"compiler", python ? "" : compiler_for(c.language)},
                     {"compiler_version", first_line(identity)},
                     {"abi_version", KH_ABI_VERSION},
                     {"command", r.command},
                     {"seconds", p.seconds}};
  write_text_file_atomic(tmp / "build.log", r.log);
  write_text_file_atomic(tmp / "build.json", info.dump(2) + "\n");

  if (unreadable_entry || (fs::exists(entry, ec) && !entry_complete(entry, c.language)))
    fs::remove_all(entry, ec);
  fs::rename(tmp, entry, ec);
  if (ec) {
    // Another build of the same key finished first: its library has the same inputs. A broken
    // entry that could not be cleared is replaced.
    if (!entry_complete(entry, c.language)) {
      fs::remove_all(entry);
      fs::rename(tmp, entry);
    } else {
      fs::remove_all(tmp, ec);
    }
  }
  r.ok = true;
  r.library = entry / library;
  r.seconds = elapsed();
  return r;
}

std::vector<BuildResult> Builder::build_all(
    const std::vector<std::pair<const Candidate*, ParamValues>>& requests) const {
  std::vector<std::string> keys;
  std::map<std::string, std::size_t> first_of_key;
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    keys.push_back(cache_key(*requests[i].first, requests[i].second));
    if (first_of_key.emplace(keys[i], i).second) unique.push_back(i);
  }

  std::vector<BuildResult> results(requests.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t u = next++; u < unique.size(); u = next++) {
      const std::size_t i = unique[u];
      try {
        results[i] = build_with_key(*requests[i].first, requests[i].second, keys[i]);
      } catch (const std::exception& e) {
        results[i].key = keys[i];
        results[i].log = std::string("[kh: build failed: ") + e.what() + "]\n";
      }
    }
  };
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::size_t workers =
      std::min<std::size_t>(options_.jobs > 0 ? options_.jobs : hardware, unique.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();

  for (std::size_t i = 0; i < requests.size(); ++i)
    if (first_of_key.at(keys[i]) != i) results[i] = results[first_of_key.at(keys[i])];
  return results;
}

}  // namespace kh
