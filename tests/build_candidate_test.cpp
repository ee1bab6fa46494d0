// candidate.toml: a full manifest reads back field by field, every malformed field gives an error
// naming the file, the field and the value, and params resolve against their allowed values.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/build/candidate.h"
#include "kh/core/error.h"
#include "test_support.h"

namespace kh {
namespace {

using test::error_of;

using ::testing::HasSubstr;

const std::string kSolution = R"([solution]
name = "gdn_decode_simple"
definition = "gdn_decode_qk4_v8_d128_k_last"
author = "kh"
)";

class CandidateManifest : public ::testing::Test {
 protected:
  CandidateManifest() {
    test::write_file(dir.path() / "kernel.cu", "// kernel\n");
    test::write_file(dir.path() / "common.cuh", "// header\n");
    test::write_file(dir.path() / "host.cpp", "// host\n");
    test::write_file(dir.path() / "k.py", "def run():\n    pass\n");
  }
  std::filesystem::path write(const std::string& text) {
    return test::write_file(dir.path() / "candidate.toml", text);
  }
  std::string manifest() const { return (dir.path() / "candidate.toml").string(); }
  // Error for a manifest with the given [build] (and anything after it).
  std::string build_error(const std::string& build) {
    write(kSolution + "[build]\n" + build);
    return error_of([&] { load_candidate(dir.path()); });
  }

  test::ScopedTempDir dir;
};

TEST_F(CandidateManifest, ReadsEveryField) {
  write(kSolution + R"(description = "one warp per head"
[build]
language = "cuda"
sources = ["kernel.cu", "./common.cuh", "host.cpp"]
entry = "kernel.cu::kh_gdn_decode"
flags = ["-O3", "--use_fast_math"]
targets = ["sm_90a", "sm_100a"]
[params]
BLOCK = [128, 256]
FAULT = ["none", "segfault"]
USE_TMA = [true, false]
)");
  const Candidate c = load_candidate(dir.path());
  EXPECT_EQ(c.dir, std::filesystem::weakly_canonical(dir.path()));
  EXPECT_TRUE(c.dir.is_absolute());
  EXPECT_EQ(c.manifest, dir.path() / "candidate.toml");
  EXPECT_EQ(c.name, "gdn_decode_simple");
  EXPECT_EQ(c.definition, "gdn_decode_qk4_v8_d128_k_last");
  EXPECT_EQ(c.author, "kh");
  EXPECT_EQ(c.description, "one warp per head");
  EXPECT_EQ(c.language, "cuda");
  EXPECT_EQ(c.sources, (std::vector<std::string>{"kernel.cu", "common.cuh", "host.cpp"}));
  EXPECT_EQ(c.entry.file, "kernel.cu");
  EXPECT_EQ(c.entry.symbol, "kh_gdn_decode");
  EXPECT_EQ(c.flags, (std::vector<std::string>{"-O3", "--use_fast_math"}));
  EXPECT_EQ(c.targets, (std::vector<std::string>{"sm_90a", "sm_100a"}));
  ASSERT_EQ(c.params.size(), 3u);  // sorted by name
  EXPECT_EQ(c.params[0].name, "BLOCK");
  EXPECT_EQ(c.params[0].values, (std::vector<std::string>{"128", "256"}));
  EXPECT_EQ(c.params[1].name, "FAULT");
  EXPECT_EQ(c.params[1].values, (std::vector<std::string>{"none", "segfault"}));
  EXPECT_EQ(c.params[2].name, "USE_TMA");
  EXPECT_EQ(c.params[2].values, (std::vector<std::string>{"true", "false"}));
}

TEST_F(CandidateManifest, MinimalCudaDefaultsToSm90a) {
  write(kSolution + R"([build]
language = "cuda"
sources = ["kernel.cu"]
entry = "kernel.cu::f"
)");
  const Candidate c = load_candidate(dir.path() / "candidate.toml");  // the file itself
  EXPECT_EQ(c.targets, std::vector<std::string>{"sm_90a"});
  EXPECT_TRUE(c.flags.empty());
  EXPECT_TRUE(c.params.empty());
  EXPECT_TRUE(c.description.empty());
}

TEST_F(CandidateManifest, CppHasNoTargets) {
  write(kSolution + R"([build]
language = "cpp"
sources = ["host.cpp"]
entry = "host.cpp::f"
)");
  EXPECT_TRUE(load_candidate(dir.path()).targets.empty());
  EXPECT_EQ(build_error("language = \"cpp\"\nsources = [\"host.cpp\"]\nentry = \"host.cpp::f\"\n"
                        "targets = [\"sm_90a\"]\n"),
            manifest() + ": build.targets: only for language \"cuda\", this candidate is \"cpp\"");
}

TEST_F(CandidateManifest, AnyManifestFileName) {
  test::write_file(dir.path() / "variant.toml", kSolution + R"([build]
language = "cpp"
sources = ["host.cpp"]
entry = "host.cpp::f"
)");
  const Candidate c = load_candidate(dir.path() / "variant.toml");
  EXPECT_EQ(c.manifest, dir.path() / "variant.toml");
  EXPECT_EQ(c.sources, std::vector<std::string>{"host.cpp"});
}

TEST_F(CandidateManifest, LanguageError) {
  EXPECT_EQ(
      build_error("language = \"rust\"\nsources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\n"),
      manifest() +
          ": build.language: expected \"cuda\", \"cpp\", \"python\" or \"triton\", got \"rust\"");
  // Python candidates: a .py entry, no compiler flags; the calling style only for them.
  EXPECT_EQ(build_error("language = \"python\"\nsources = [\"k.py\"]\nentry = \"k.py::run\"\n"
                        "flags = [\"-O3\"]\n"),
            manifest() + ": build.flags: only for compiled languages, this candidate is \"python\"");
  EXPECT_EQ(build_error("language = \"cuda\"\nsources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\n"
                        "destination_passing_style = false\n"),
            manifest() + ": build.destination_passing_style: only for Python candidates: a cuda "
                         "entry always writes its outputs");
  EXPECT_EQ(build_error("language = 3\n"),
            manifest() + ": build.language: expected a string, got 3");
}

TEST_F(CandidateManifest, SourceErrors) {
  const std::string tail = "\nentry = \"kernel.cu::f\"\nlanguage = \"cuda\"\n";
  EXPECT_EQ(build_error("sources = [\"kernel.cu\", \"b.cu\"]" + tail),
            manifest() + ": build.sources[1]: file \"b.cu\" does not exist");
  EXPECT_EQ(build_error("sources = [\"kernel.cu\", \"/etc/passwd\"]" + tail),
            manifest() + ": build.sources[1]: \"/etc/passwd\" must be relative to the folder");
  EXPECT_EQ(build_error("sources = [\"../kernel.cu\"]" + tail),
            manifest() + ": build.sources[0]: \"../kernel.cu\" must not contain \"..\"");
  EXPECT_EQ(build_error("sources = [\"kernel.cu\", \"./kernel.cu\"]" + tail),
            manifest() + ": build.sources[1]: \"./kernel.cu\" is listed twice");
  EXPECT_EQ(build_error("sources = [\"kernel.cu\", 7]" + tail),
            manifest() + ": build.sources[1]: expected a string, got 7");
  EXPECT_EQ(build_error("sources = \"kernel.cu\"" + tail),
            manifest() + ": build.sources: expected an array of strings, got \"kernel.cu\"");
  EXPECT_EQ(build_error("sources = []" + tail), manifest() + ": build.sources: must not be empty");
  EXPECT_EQ(build_error("sources = [\"common.cuh\"]\nentry = \"common.cuh::f\"\n"
                        "language = \"cuda\"\n"),
            manifest() + ": build.sources: no file the compiler takes (.cu, .cpp, .cc, .cxx, .c)");
  // A .cu file is not a cpp source.
  EXPECT_EQ(
      build_error("sources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\nlanguage = \"cpp\"\n"),
      manifest() + ": build.sources: no file the compiler takes (.cpp, .cc, .cxx, .c)");
  std::filesystem::create_directories(dir.path() / "sub");
  EXPECT_EQ(build_error("sources = [\"kernel.cu\", \"sub\"]" + tail),
            manifest() + ": build.sources[1]: \"sub\" is not a regular file");
}

TEST_F(CandidateManifest, EntryErrors) {
  const std::string head = "language = \"cuda\"\nsources = [\"kernel.cu\", \"host.cpp\"]\n";
  EXPECT_EQ(
      build_error(head + "entry = \"other.cu::f\"\n"),
      manifest() +
          ": build.entry: file \"other.cu\" is not among build.sources (kernel.cu, host.cpp)");
  EXPECT_EQ(build_error(head + "entry = \"kernel.cu\"\n"),
            manifest() +
                ": build.entry: entry point \"kernel.cu\" must have the form "
                "\"file::symbol\"");
  EXPECT_EQ(build_error(head + "entry = \"kernel.cu::my-kernel\"\n"),
            manifest() + ": build.entry: symbol \"my-kernel\" is not a C identifier");
  EXPECT_EQ(build_error(head), manifest() + ": build.entry: missing (a string is required)");
  // The entry is normalised like the sources.
  write(kSolution + "[build]\n" + head + "entry = \"./host.cpp::f\"\n");
  EXPECT_EQ(load_candidate(dir.path()).entry.file, "host.cpp");
}

TEST_F(CandidateManifest, TargetErrors) {
  const std::string head =
      "language = \"cuda\"\nsources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\n";
  EXPECT_EQ(build_error(head + "targets = [\"sm_90a\", \"hopper\"]\n"),
            manifest() +
                ": build.targets[1]: expected a CUDA target like \"sm_90a\" "
                "(sm_<major><minor>[a|f]), got \"hopper\"");
  EXPECT_THAT(build_error(head + "targets = [\"sm90a\"]\n"), HasSubstr("got \"sm90a\""));
  EXPECT_EQ(build_error(head + "targets = []\n"),
            manifest() + ": build.targets: must not be empty");
}

TEST_F(CandidateManifest, StructureErrors) {
  write("[build]\nlanguage = \"cuda\"\n");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": solution: missing; the manifest needs a [solution] table");
  write(kSolution);
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": build: missing; the manifest needs a [build] table");
  write("solution = 5\n");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": solution: expected a table, got 5");
  write("[solution]\nname = \"x\"\nauthor = \"kh\"\n[build]\n");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": solution.definition: missing (a string is required)");
  write("[solution]\nname = \"\"\n");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": solution.name: must not be empty");
  EXPECT_EQ(
      build_error("language = \"cuda\"\nflag = [\"-O3\"]\n"),
      manifest() +
          ": build.flag: unknown key; expected one of language, sources, entry, flags, targets, "
          "destination_passing_style");
  write(kSolution + "[extra]\n");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": extra: unknown key; expected one of solution, build, params");
  EXPECT_EQ(build_error("language = \"cuda\"\nsources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\n"
                        "flags = [\"-O3\", 2]\n"),
            manifest() + ": build.flags[1]: expected a string, got 2");
}

TEST_F(CandidateManifest, TomlSyntaxErrorHasLineAndColumn) {
  write(kSolution + "[build]\nlanguage = \"cuda\nsources = []\n");
  const std::string e = error_of([&] { load_candidate(dir.path()); });
  EXPECT_THAT(e, HasSubstr(manifest() + ":6:"));
  EXPECT_THAT(e, HasSubstr("invalid TOML"));
}

TEST_F(CandidateManifest, MissingManifest) {
  std::filesystem::remove(dir.path() / "candidate.toml");
  EXPECT_EQ(error_of([&] { load_candidate(dir.path()); }),
            manifest() + ": no such candidate manifest");
}

TEST_F(CandidateManifest, ParamErrors) {
  const std::string head =
      "language = \"cuda\"\nsources = [\"kernel.cu\"]\nentry = \"kernel.cu::f\"\n[params]\n";
  EXPECT_EQ(
      build_error(head + "BLOCK = []\n"),
      manifest() + ": params.BLOCK: expected a non-empty array of allowed values, got an array");
  EXPECT_EQ(build_error(head + "BLOCK = 128\n"),
            manifest() + ": params.BLOCK: expected a non-empty array of allowed values, got 128");
  EXPECT_EQ(build_error(head + "SCALE = [1.5]\n"),
            manifest() + ": params.SCALE[0]: expected an integer, a boolean or a string, got 1.5");
  EXPECT_EQ(build_error(head + "BLOCK = [128, 128]\n"),
            manifest() + ": params.BLOCK[1]: value \"128\" is listed twice");
  EXPECT_EQ(build_error(head + "MODE = [\"a b\"]\n"),
            manifest() +
                ": params.MODE[0]: a string value may hold only letters, digits and "
                "_ . + -, got \"a b\"");
  EXPECT_EQ(build_error(head + "\"BAD-NAME\" = [1]\n"),
            manifest() +
                ": params.BAD-NAME: a param name must be a C identifier (it becomes "
                "-DBAD-NAME=...)");
}

class CandidateParams : public CandidateManifest {
 protected:
  CandidateParams() {
    write(kSolution + R"([build]
language = "cuda"
sources = ["kernel.cu"]
entry = "kernel.cu::f"
[params]
BLOCK = [128, 256]
FAULT = ["none", "segfault"]
)");
    c = load_candidate(dir.path());
  }
  Candidate c;
};

TEST_F(CandidateParams, DefaultsAreTheFirstValues) {
  EXPECT_EQ(default_params(c), (ParamValues{{"BLOCK", "128"}, {"FAULT", "none"}}));
  EXPECT_EQ(resolve_params(c, {}), default_params(c));
}

TEST_F(CandidateParams, OverridesApply) {
  EXPECT_EQ(resolve_params(c, {"FAULT=segfault"}),
            (ParamValues{{"BLOCK", "128"}, {"FAULT", "segfault"}}));
  EXPECT_EQ(resolve_params(c, {"BLOCK=256", "FAULT=segfault"}),
            (ParamValues{{"BLOCK", "256"}, {"FAULT", "segfault"}}));
}

TEST_F(CandidateParams, OverrideErrorsListWhatIsAllowed) {
  EXPECT_EQ(error_of([&] { resolve_params(c, {"BLOCK=64"}); }),
            manifest() + ": params.BLOCK: value \"64\" is not allowed; allowed: 128, 256");
  EXPECT_EQ(error_of([&] { resolve_params(c, {"WARPS=4"}); }),
            manifest() + ": params: no param \"WARPS\"; the candidate's params are BLOCK, FAULT");
  EXPECT_EQ(error_of([&] { resolve_params(c, {"BLOCK"}); }),
            manifest() + ": param override \"BLOCK\": expected NAME=value");
  EXPECT_EQ(error_of([&] { resolve_params(c, {"=1"}); }),
            manifest() + ": param override \"=1\": expected NAME=value");
  EXPECT_EQ(error_of([&] {
              resolve_params(c, {"BLOCK=128", "BLOCK=256"});
            }),
            manifest() + ": params.BLOCK: given twice in the overrides");
}

TEST_F(CandidateParams, CheckParams) {
  check_params(c, {{"BLOCK", "256"}, {"FAULT", "none"}});
  EXPECT_EQ(error_of([&] {
              check_params(c, {{"BLOCK", "256"}});
            }),
            manifest() + ": params.FAULT: no value given; allowed: none, segfault");
  EXPECT_EQ(error_of([&] {
              check_params(c, {{"BLOCK", "1"}, {"FAULT", "none"}});
            }),
            manifest() + ": params.BLOCK: value \"1\" is not allowed; allowed: 128, 256");
  EXPECT_THAT(error_of([&] {
                check_params(c, {{"BLOCK", "128"}, {"FAULT", "none"}, {"X", "1"}});
              }),
              HasSubstr("no param \"X\""));
}

TEST(CandidateNoParams, OverrideSaysThereAreNone) {
  test::ScopedTempDir dir;
  test::write_file(dir.path() / "a.cpp", "");
  test::write_file(dir.path() / "candidate.toml", kSolution + R"([build]
language = "cpp"
sources = ["a.cpp"]
entry = "a.cpp::f"
)");
  const Candidate c = load_candidate(dir.path());
  EXPECT_TRUE(default_params(c).empty());
  EXPECT_THAT(error_of([&] { resolve_params(c, {"X=1"}); }),
              HasSubstr("no param \"X\"; the candidate has no params"));
}

TEST(CudaTarget, GencodeFlags) {
  EXPECT_EQ(cuda_gencode_flag("sm_90a", "t"), "-gencode=arch=compute_90a,code=sm_90a");
  EXPECT_EQ(cuda_gencode_flag("sm_100a", "t"), "-gencode=arch=compute_100a,code=sm_100a");
  EXPECT_EQ(cuda_gencode_flag("sm_90", "t"), "-gencode=arch=compute_90,code=sm_90");
  for (const char* bad : {"sm_9", "sm_90b", "compute_90a", "sm_90a ", "", "sm_1000a"})
    EXPECT_THAT(error_of([&] { cuda_gencode_flag(bad, "where"); }),
                HasSubstr(std::string("where: expected a CUDA target like \"sm_90a\"")))
        << bad;
}

TEST(CompiledSource, ByLanguageAndExtension) {
  EXPECT_TRUE(is_compiled_source("cuda", "a/k.cu"));
  EXPECT_TRUE(is_compiled_source("cuda", "h.cpp"));
  EXPECT_FALSE(is_compiled_source("cuda", "k.cuh"));
  EXPECT_FALSE(is_compiled_source("cpp", "k.cu"));
  EXPECT_TRUE(is_compiled_source("cpp", "k.cc"));
  EXPECT_TRUE(is_compiled_source("cpp", "k.c"));
  EXPECT_FALSE(is_compiled_source("cpp", "k.h"));
}

}  // namespace
}  // namespace kh
