// Builder: content keys react to every input, real builds of cpp candidates load and run through
// the kh ABI, the cache skips the compiler, failures are not cached, build_all runs in parallel,
// and a cuda candidate compiles for sm_90a when nvcc is present.
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <dlfcn.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/abi.h"
#include "kh/build/builder.h"
#include "kh/build/kh_home.h"
#include "kh/core/error.h"
#include "kh/core/json_io.h"
#include "kh/core/process.h"
#include "test_support.h"

namespace kh {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kEntrySource = R"(#include <kh/abi.h>
#include "value.h"
KH_EXPORT int kh_entry(const DLTensor* tensors, int32_t num_tensors, void* stream,
                       void* workspace, uint64_t workspace_bytes) {
  (void)stream; (void)workspace; (void)workspace_bytes;
  if (num_tensors != 1 || tensors[0].ndim != 0) return KH_ERROR_INVALID_ARGUMENT;
  *static_cast<int32_t*>(tensors[0].data) = VALUE + OFFSET;
  return KH_OK;
}
)";

// A cpp candidate whose entry writes VALUE + OFFSET into its one int32 output.
fs::path write_cpp_candidate(const fs::path& dir, const std::string& name = "tiny",
                             const std::string& source = kEntrySource) {
  test::write_file(dir / "entry.cpp", source);
  test::write_file(dir / "value.h", "#define OFFSET 0\n");
  test::write_file(dir / "candidate.toml", R"([solution]
name = ")" + name + R"("
definition = "none"
author = "kh"
[build]
language = "cpp"
sources = ["entry.cpp", "value.h"]
entry = "entry.cpp::kh_entry"
flags = ["-Wall"]
[params]
VALUE = [1, 7]
)");
  return dir;
}

// A compiler that records each call in `log` (one line: its arguments), then runs g++.
std::string fake_compiler(const fs::path& dir, const std::string& version,
                          const std::string& before = "") {
  const fs::path script = dir / ("cc-" + version);
  test::write_file(script, "#!/bin/sh\necho \"$@\" >> " + (dir / "calls.log").string() +
                               "\nif [ \"$1\" = --version ]; then echo fake-cc " + version +
                               "; exit 0; fi\n" + before + "exec g++ \"$@\"\n");
  fs::permissions(script, fs::perms::owner_all);
  return script.string();
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int compile_calls(const fs::path& log) {
  int n = 0;
  for (const auto& line : lines_of(log))
    if (line != "--version") ++n;
  return n;
}

// Loads the library and calls its entry on one int32 scalar; returns what it wrote.
int32_t call_entry(const fs::path& library, const std::string& symbol = "kh_entry") {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << ::dlerror();
  if (handle == nullptr) return -1;
  auto entry = reinterpret_cast<kh_entry_fn>(::dlsym(handle, symbol.c_str()));
  EXPECT_NE(entry, nullptr) << symbol;
  int32_t out = -1;
  if (entry != nullptr) {
    DLTensor t{};
    t.data = &out;
    t.device = {kDLCPU, 0};
    t.ndim = 0;
    t.dtype = {kDLInt, 32, 1};
    EXPECT_EQ(entry(&t, 1, nullptr, nullptr, 0), KH_OK);
  }
  ::dlclose(handle);
  return out;
}

class BuildCache : public ::testing::Test {
 protected:
  BuildCache() {
    write_cpp_candidate(dir.path() / "cand");
    options.cache_dir = dir.path() / "cache";
    options.cxx = "g++";
  }
  Candidate candidate() const { return load_candidate(dir.path() / "cand"); }

  test::ScopedTempDir dir;
  BuildOptions options;
};

TEST_F(BuildCache, KeyIsStableAndHex) {
  const Builder builder(options);
  const Candidate c = candidate();
  const std::string key = builder.cache_key(c, default_params(c));
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(builder.cache_key(candidate(), default_params(c)), key);
  EXPECT_EQ(Builder(options).cache_key(c, default_params(c)), key);
  // Where the candidate lives does not matter; only what it is.
  write_cpp_candidate(dir.path() / "elsewhere");
  const Candidate moved = load_candidate(dir.path() / "elsewhere");
  EXPECT_EQ(builder.cache_key(moved, default_params(moved)), key);
}

TEST_F(BuildCache, KeyChangesWithEveryInput) {
  const Builder builder(options);
  const Candidate c = candidate();
  const ParamValues params = default_params(c);
  const std::string key = builder.cache_key(c, params);

  // A source byte, and a header that is not compiled but included.
  const std::string source = read_text_file(c.dir / "entry.cpp");
  test::write_file(c.dir / "entry.cpp", source + " ");
  EXPECT_NE(builder.cache_key(c, params), key);
  test::write_file(c.dir / "entry.cpp", source);
  EXPECT_EQ(builder.cache_key(c, params), key);
  test::write_file(c.dir / "value.h", "#define OFFSET 1\n");
  EXPECT_NE(builder.cache_key(c, params), key);
  test::write_file(c.dir / "value.h", "#define OFFSET 0\n");

  Candidate changed = c;
  changed.flags.push_back("-DEXTRA");
  EXPECT_NE(builder.cache_key(changed, params), key);

  EXPECT_NE(builder.cache_key(c, {{"VALUE", "7"}}), key);

  changed = c;
  changed.entry.symbol = "other";
  EXPECT_NE(builder.cache_key(changed, params), key);

  changed = c;
  changed.language = "cuda";
  changed.targets = {"sm_90a"};
  const std::string cuda_key = builder.cache_key(changed, params);
  EXPECT_NE(cuda_key, key);
  changed.targets = {"sm_100a"};
  EXPECT_NE(builder.cache_key(changed, params), cuda_key);

  BuildOptions other = options;
  other.cxx = fake_compiler(dir.path(), "1.0");
  const std::string fake1 = Builder(other).cache_key(c, params);
  EXPECT_NE(fake1, key);
  other.cxx = fake_compiler(dir.path(), "2.0");
  EXPECT_NE(Builder(other).cache_key(c, params), fake1);
}

TEST_F(BuildCache, KeyRejectsParamsTheCandidateDoesNotAllow) {
  const Builder builder(options);
  EXPECT_THROW(builder.cache_key(candidate(), {{"VALUE", "3"}}), Error);
  EXPECT_THROW(builder.cache_key(candidate(), {}), Error);
  EXPECT_THROW(builder.build(candidate(), {{"VALUE", "1"}, {"OTHER", "1"}}), Error);
}

TEST_F(BuildCache, BuildsLoadsAndCallsACppCandidate) {
  options.cxx = fake_compiler(dir.path(), "1.0");
  const Builder builder(options);
  const Candidate c = candidate();
  const BuildResult built = builder.build(c, default_params(c));
  ASSERT_TRUE(built.ok) << built.log;
  EXPECT_FALSE(built.cached);
  EXPECT_EQ(built.key, builder.cache_key(c, default_params(c)));
  EXPECT_EQ(built.library, options.cache_dir / built.key / "libcandidate.so");
  EXPECT_TRUE(built.library.is_absolute());
  EXPECT_EQ(call_entry(built.library), 1);
  EXPECT_EQ(compile_calls(dir.path() / "calls.log"), 1);

  // The record of the build.
  const fs::path entry = options.cache_dir / built.key;
  EXPECT_TRUE(fs::is_regular_file(entry / "build.log"));
  const Json info = read_json_file(entry / "build.json");
  EXPECT_EQ(info.at("key"), built.key);
  EXPECT_EQ(info.at("command").get<std::vector<std::string>>(), built.command);
  EXPECT_EQ(info.at("params").at("VALUE"), "1");
  EXPECT_EQ(info.at("compiler_version"), "fake-cc 1.0");
  EXPECT_EQ(info.at("sources").size(), 2u);
  // cpp command: base flags, include dirs, params, candidate flags, compiled sources only.
  const auto& cmd = built.command;
  EXPECT_EQ(cmd.at(0), options.cxx);
  EXPECT_EQ(std::vector<std::string>(cmd.begin() + 1, cmd.begin() + 5),
            (std::vector<std::string>{"-shared", "-fPIC", "-std=c++17", "-O2"}));
  EXPECT_THAT(cmd, ::testing::Contains("-I" + c.dir.string()));
  EXPECT_THAT(cmd, ::testing::Contains("-I" + (kh_home() / "include").string()));
  EXPECT_THAT(cmd, ::testing::Contains("-DVALUE=1"));
  EXPECT_THAT(cmd, ::testing::Contains("-Wall"));
  EXPECT_THAT(cmd, ::testing::Contains("entry.cpp"));
  EXPECT_THAT(cmd, ::testing::Not(::testing::Contains("value.h")));
  // No temporary folder is left.
  for (const auto& item : fs::directory_iterator(options.cache_dir))
    EXPECT_EQ(item.path().filename().string().find(".tmp."), std::string::npos) << item.path();

  // Again: from the cache, no compiler (not even --version: the identity is known).
  const auto calls_before = lines_of(dir.path() / "calls.log").size();
  const BuildResult again = builder.build(c, default_params(c));
  ASSERT_TRUE(again.ok);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.key, built.key);
  EXPECT_EQ(again.library, built.library);
  EXPECT_EQ(again.command, built.command);
  EXPECT_EQ(lines_of(dir.path() / "calls.log").size(), calls_before);
  EXPECT_LT(again.seconds, built.seconds / 5);

  // Another param value is another library.
  const BuildResult seven = builder.build(c, {{"VALUE", "7"}});
  ASSERT_TRUE(seven.ok) << seven.log;
  EXPECT_FALSE(seven.cached);
  EXPECT_NE(seven.key, built.key);
  EXPECT_EQ(call_entry(seven.library), 7);
}

TEST_F(BuildCache, AMissingLibraryIsRebuilt) {
  const Builder builder(options);
  const Candidate c = candidate();
  const BuildResult built = builder.build(c, default_params(c));
  ASSERT_TRUE(built.ok) << built.log;
  fs::remove(built.library);
  const BuildResult again = builder.build(c, default_params(c));
  ASSERT_TRUE(again.ok) << again.log;
  EXPECT_FALSE(again.cached);
  EXPECT_EQ(call_entry(again.library), 1);
  // A corrupt record too.
  test::write_file(options.cache_dir / built.key / "build.json", "{");
  const BuildResult third = builder.build(c, default_params(c));
  EXPECT_FALSE(third.cached);
  EXPECT_TRUE(builder.build(c, default_params(c)).cached);
}

TEST_F(BuildCache, AbandonedTemporaryFoldersAreRemoved) {
  const Builder builder(options);
  const Candidate c = candidate();
  const std::string key = builder.cache_key(c, default_params(c));
  const fs::path abandoned = options.cache_dir / (key + ".tmp.999999999.0");
  test::write_file(abandoned / "libcandidate.so", "half");
  ASSERT_TRUE(builder.build(c, default_params(c)).ok);
  EXPECT_FALSE(fs::exists(abandoned));
}

TEST_F(BuildCache, CompileErrorIsReportedAndNotCached) {
  write_cpp_candidate(dir.path() / "cand", "broken", "int kh_entry( { this is not C++\n");
  options.cxx = fake_compiler(dir.path(), "1.0");
  const Builder builder(options);
  const Candidate c = candidate();
  const BuildResult r = builder.build(c, default_params(c));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.cached);
  EXPECT_THAT(r.log, HasSubstr("entry.cpp:1"));
  EXPECT_THAT(r.log, HasSubstr("error"));
  EXPECT_THAT(r.log, HasSubstr("[kh: compiler exited with status 1]"));
  EXPECT_FALSE(fs::exists(options.cache_dir / r.key));
  EXPECT_TRUE(fs::is_empty(options.cache_dir));  // no temporary folder left either
  // Trying again runs the compiler again.
  EXPECT_FALSE(builder.build(c, default_params(c)).ok);
  EXPECT_EQ(compile_calls(dir.path() / "calls.log"), 2);
}

TEST_F(BuildCache, ASourceEditedDuringTheBuildIsNotCached) {
  // The compiler runs in the candidate folder; this one edits the source while "compiling".
  options.cxx = fake_compiler(dir.path(), "1.0", "echo '// edited' >> entry.cpp\n");
  const Builder builder(options);
  const Candidate c = candidate();
  const BuildResult r = builder.build(c, default_params(c));
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.log, HasSubstr("the sources changed during the build"));
  EXPECT_TRUE(fs::is_empty(options.cache_dir));
}

TEST_F(BuildCache, MissingCompilerIsAFailedBuild) {
  options.cxx = "kh-no-such-compiler";
  const BuildResult r = Builder(options).build(candidate(), {{"VALUE", "1"}});
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.log, HasSubstr("cannot run \"kh-no-such-compiler\""));
}

TEST_F(BuildCache, CompilerTimeout) {
  options.cxx = fake_compiler(dir.path(), "1.0", "sleep 100\n");
  options.timeout = std::chrono::seconds(1);
  const BuildResult r = Builder(options).build(candidate(), {{"VALUE", "1"}});
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.log, HasSubstr("timeout"));
  EXPECT_LT(r.seconds, 5);
}

TEST_F(BuildCache, BuildAllRunsInParallelInRequestOrder) {
  // Each compile announces its start, waits a second, then announces its end.
  const fs::path events = dir.path() / "events.log";
  options.cxx = fake_compiler(
      dir.path(), "1.0",
      "echo start >> " + events.string() + "\nsleep 1\necho end >> " + events.string() + "\n");
  options.jobs = 3;
  std::vector<Candidate> candidates;
  for (const char* name : {"a", "b", "c"})
    candidates.push_back(
        load_candidate(write_cpp_candidate(dir.path() / name, name, kEntrySource)));
  // Distinct content per candidate, so three keys.
  for (int i = 0; i < 3; ++i)
    test::write_file(candidates[i].dir / "value.h",
                     "#define OFFSET " + std::to_string(10 * i) + "\n");
  const Builder builder(options);
  const auto results = builder.build_all({{&candidates[0], {{"VALUE", "1"}}},
                                          {&candidates[1], {{"VALUE", "7"}}},
                                          {&candidates[2], {{"VALUE", "1"}}},
                                          {&candidates[1], {{"VALUE", "7"}}}});  // a duplicate
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(call_entry(results[0].library), 1);
  EXPECT_EQ(call_entry(results[1].library), 17);
  EXPECT_EQ(call_entry(results[2].library), 21);
  EXPECT_EQ(results[3].key, results[1].key);
  EXPECT_EQ(compile_calls(dir.path() / "calls.log"), 3);  // the duplicate is built once
  // All three compiles started before the first ended.
  EXPECT_EQ(lines_of(events),
            (std::vector<std::string>{"start", "start", "start", "end", "end", "end"}));

  // Everything again: all cached.
  for (const auto& r : builder.build_all({{&candidates[2], {{"VALUE", "1"}}}})) {
    EXPECT_TRUE(r.cached);
  }
}

TEST_F(BuildCache, BuildAllValidatesEverythingFirst) {
  options.cxx = fake_compiler(dir.path(), "1.0");
  const Candidate c = candidate();
  EXPECT_THROW(Builder(options).build_all({{&c, {{"VALUE", "1"}}}, {&c, {{"VALUE", "2"}}}}), Error);
  EXPECT_EQ(compile_calls(dir.path() / "calls.log"), 0);
}

TEST_F(BuildCache, CudaCandidateCompilesForSm90a) {
  const auto nvcc = find_nvcc();
  if (!nvcc) GTEST_SKIP() << "nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)";
  const fs::path cand = dir.path() / "cuda";
  test::write_file(cand / "kernel.cu", R"(#include <cuda_runtime.h>
#include <kh/abi.h>
__global__ void write_one(int32_t* out) { *out = BLOCK; }
KH_EXPORT int kh_entry(const DLTensor* tensors, int32_t num_tensors, void* stream,
                       void* workspace, uint64_t workspace_bytes) {
  (void)workspace; (void)workspace_bytes;
  write_one<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<int32_t*>(tensors[num_tensors - 1].data));
  return cudaGetLastError() == cudaSuccess ? KH_OK : KH_ERROR_LAUNCH;
}
)");
  test::write_file(cand / "candidate.toml", R"([solution]
name = "tiny_cuda"
definition = "none"
author = "kh"
[build]
language = "cuda"
sources = ["kernel.cu"]
entry = "kernel.cu::kh_entry"
[params]
BLOCK = [1]
)");
  const Candidate c = load_candidate(cand);
  const BuildResult r = Builder(options).build(c, default_params(c));
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_THAT(r.command, ::testing::Contains("-gencode=arch=compute_90a,code=sm_90a"));
  EXPECT_THAT(r.command, ::testing::Contains("--expt-relaxed-constexpr"));
  EXPECT_EQ(find_program(r.command.at(0)), nvcc);
  // The library loads (the static CUDA runtime needs no driver until the first call).
  void* handle = ::dlopen(r.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(handle, "kh_entry"), nullptr);
  ::dlclose(handle);
  EXPECT_TRUE(Builder(options).build(c, default_params(c)).cached);
}

TEST(KhHome, FoundAboveTheTestExecutable) {
  EXPECT_EQ(fs::weakly_canonical(kh_home()), fs::weakly_canonical(test::source_dir()));
  const auto dirs = kh_include_dirs();
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_TRUE(fs::is_regular_file(dirs[0] / "kh/abi.h"));
  EXPECT_TRUE(fs::is_regular_file(dirs[1] / "dlpack/dlpack.h"));
}

TEST(KhHome, EnvironmentOverrides) {
  test::ScopedTempDir dir;
  ::setenv("KH_HOME", dir.path().c_str(), 1);
  try {
    kh_home();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("KH_HOME=" + dir.path().string()));
    EXPECT_THAT(e.what(), HasSubstr("include/kh/abi.h"));
  }
  test::write_file(dir.path() / "include/kh/abi.h", "#define KH_ABI_VERSION 1\n");
  EXPECT_EQ(kh_home(), dir.path());
  EXPECT_THROW(kh_include_dirs(), Error);  // no .deps/tvm-ffi/include/dlpack there
  ::unsetenv("KH_HOME");
  EXPECT_EQ(fs::weakly_canonical(kh_home()), fs::weakly_canonical(test::source_dir()));
}

}  // namespace
}  // namespace kh
