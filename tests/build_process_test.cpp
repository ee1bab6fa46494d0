// run_process: exit status, signals, time limit (the whole process group dies), output capture
// and its cap, missing programs and folders, and no child left behind.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <signal.h>
#include <sys/wait.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/process.h"
#include "test_support.h"

namespace kh {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A process that is gone or a zombie waiting for its new parent to reap it.
bool process_dead(long pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(RunProcess, ExitCodes) {
  const ProcessResult ok = run_process({"true"}, 10s);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.signal, 0);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_TRUE(ok.ok());

  const ProcessResult three = run_process({"sh", "-c", "exit 3"}, 10s);
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_FALSE(three.ok());
}

TEST(RunProcess, Signal) {
  const ProcessResult r = run_process({"sh", "-c", "kill -TERM $$"}, 10s);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.ok());
}

TEST(RunProcess, TimeoutKillsTheChild) {
  const ProcessResult r = run_process({"sleep", "100"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.seconds, 2.0);
  EXPECT_GE(r.seconds, 0.29);
  EXPECT_THAT(r.output, HasSubstr("time limit"));
}

TEST(RunProcess, TimeoutKillsTheProcessGroup) {
  // The shell prints its background child's pid, then waits; both must die at the limit.
  const ProcessResult r = run_process({"sh", "-c", "sleep 100 & echo $!; wait"}, 500ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 2.0);
  const long grandchild = std::stol(r.output);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(process_dead(grandchild)) << grandchild;
}

TEST(RunProcess, BackgroundProcessHoldingTheOutputDoesNotHang) {
  const ProcessResult r = run_process({"sh", "-c", "sleep 100 & echo started"}, 30s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "started\n");
  EXPECT_LT(r.seconds, 2.0);
}

TEST(RunProcess, CapturesStdoutAndStderrInterleaved) {
  const ProcessResult r =
      run_process({"sh", "-c", "echo one; echo two >&2; echo three; echo four >&2"}, 10s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "one\ntwo\nthree\nfour\n");
}

TEST(RunProcess, StdinIsEmpty) {
  const ProcessResult r = run_process({"cat"}, 10s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
}

TEST(RunProcess, OutputKeepsTheLastMebibyte) {
  const ProcessResult r =
      run_process({"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo END"}, 30s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, StartsWith(kProcessOutputTruncated));
  EXPECT_EQ(r.output.size(), std::string(kProcessOutputTruncated).size() + kProcessOutputLimit);
  EXPECT_EQ(r.output.substr(r.output.size() - 5), "xEND\n");
}

TEST(RunProcess, MissingProgram) {
  const ProcessResult r = run_process({"kh-no-such-program-xyz", "arg"}, 10s);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.output, HasSubstr("cannot run \"kh-no-such-program-xyz\""));
  EXPECT_THAT(r.output, HasSubstr("No such file or directory"));
}

TEST(RunProcess, WorkingDirectory) {
  test::ScopedTempDir dir;
  const ProcessResult r = run_process({"pwd"}, 10s, dir.path());
  EXPECT_EQ(r.output, dir.path().string() + "\n");

  const ProcessResult missing = run_process({"pwd"}, 10s, dir.path() / "absent");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_THAT(missing.output, HasSubstr("cannot change directory"));
  EXPECT_THAT(missing.output, HasSubstr("absent"));
}

TEST(RunProcess, EmptyCommandIsAnError) {
  EXPECT_THROW(run_process({}, 1s), Error);
}

TEST(RunProcess, LeavesNoChildBehind) {
  run_process({"true"}, 10s);
  run_process({"sleep", "100"}, 100ms);
  run_process({"sh", "-c", "sleep 100 &"}, 10s);
  run_process({"kh-no-such-program-xyz"}, 10s);
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST(RunProcess, ConcurrentRunsKeepTheirOutputApart) {
  std::vector<std::thread> threads;
  std::vector<ProcessResult> results(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&results, i] {
      results[i] = run_process({"sh", "-c", "sleep 0.2; echo " + std::to_string(i)}, 10s);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].output, std::to_string(i) + "\n");
    EXPECT_LT(results[i].seconds, 2.0);
  }
}

TEST(FindProgram, SearchesPath) {
  const auto sh = find_program("sh");
  ASSERT_TRUE(sh);
  EXPECT_TRUE(sh->is_absolute());
  EXPECT_FALSE(find_program("kh-no-such-program-xyz"));
  EXPECT_TRUE(find_program(sh->string()));
  EXPECT_FALSE(find_program("/nonexistent/sh"));
}

}  // namespace
}  // namespace kh
