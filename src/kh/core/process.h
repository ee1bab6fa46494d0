// Running a child process to completion with a time limit, capturing its output. The child gets
// its own process group so a timeout kills everything it started (nvcc spawns cicc, ptxas, ...).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kh {

struct ProcessResult {
  int exit_code = -1;      // the child's exit status; -1 when a signal ended it
  int signal = 0;          // the signal that ended the child, 0 if it exited
  bool timed_out = false;  // killed (with its process group) because the time limit passed
  std::string output;      // stdout and stderr interleaved, as the child wrote them
  double seconds = 0;      // wall time from start to reaping

  bool ok() const { return exit_code == 0 && signal == 0 && !timed_out; }
};

/// Output beyond this is dropped from the front: the tail of a log is the useful part.
inline constexpr std::size_t kProcessOutputLimit = std::size_t{1} << 20;
inline constexpr const char* kProcessOutputTruncated = "[output truncated]\n";

/// Where a child's input comes from and its error output goes, beyond the defaults.
struct ProcessOptions {
  std::filesystem::path cwd;          // empty: this process's
  std::filesystem::path stdin_file;   // empty: /dev/null
  std::filesystem::path stderr_file;  // empty: stderr joins `output`; else it is written here
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
};

/// Runs argv[0] (looked up in PATH) as `options` say (stdin from /dev/null by default) and waits
/// for it. On timeout the child's whole process group is killed with SIGKILL. The child is always
/// reaped. A program that cannot be started gives exit code 127 and a message in `output`.
/// Throws kh::Error only when the process cannot be created at all (empty argv, fork failure).
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const ProcessOptions& options);
inline ProcessResult run_process(const std::vector<std::string>& argv,
                                 std::chrono::milliseconds timeout,
                                 const std::filesystem::path& cwd = {}) {
  return run_process(argv, timeout, ProcessOptions{cwd, {}, {}, {}});
}

/// This process's executable (/proc/self/exe): kh, for the kh commands it runs itself.
std::string self_executable();

/// The full path of an executable found through PATH (or `name` itself if it contains a '/' and
/// is executable); nullopt when there is none.
std::optional<std::filesystem::path> find_program(const std::string& name);

}  // namespace kh
