#include "kh/core/process.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kh/core/error.h"

namespace kh {
namespace {

using Clock = std::chrono::steady_clock;

// How long output may keep arriving after the child exited: a background process it left behind
// may hold the pipe open forever, and waiting for it would turn every such run into a timeout.
constexpr std::chrono::milliseconds kStragglerGrace{500};
// Longest sleep between checks for the child's exit while its output pipe stays quiet.
constexpr int kPollMs = 50;

// What the child reports through the exec-status pipe when it cannot start the program.
struct ChildFailure {
  int stage;  // 0: chdir, 1: exec
  int error;  // errno
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

void make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail("run_process: pipe: {}", std::strerror(errno));
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
}

// Runs in the forked child: only async-signal-safe calls until exec.
// `stdin_path` and `stderr_path` may be null (/dev/null; stderr joins the output).
[[noreturn]] void exec_child(char* const* argv, char* const* envp, const char* cwd,
                             const char* stdin_path, const char* stderr_path, int output_fd,
                             int status_fd) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // exec keeps ignored signals ignored; the child should see the defaults.
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
  const int input = ::open(stdin_path != nullptr ? stdin_path : "/dev/null", O_RDONLY);
  if (input >= 0) ::dup2(input, STDIN_FILENO);
  ::dup2(output_fd, STDOUT_FILENO);
  const int errors =
      stderr_path != nullptr ? ::open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
  ::dup2(errors >= 0 ? errors : output_fd, STDERR_FILENO);
  ChildFailure failure{0, 0};
  if (cwd != nullptr && ::chdir(cwd) != 0) {
    failure.error = errno;
  } else {
    ::execvpe(argv[0], argv, envp);
    failure = {1, errno};
  }
  [[maybe_unused]] ssize_t n = ::write(status_fd, &failure, sizeof failure);
  ::_exit(127);
}

// Keeps the last kProcessOutputLimit bytes; trims in large steps so appending stays linear.
class OutputTail {
 public:
  void append(const char* data, std::size_t size) {
    text_.append(data, size);
    if (text_.size() > 2 * kProcessOutputLimit) trim();
  }
  std::string finish() {
    if (text_.size() > kProcessOutputLimit) trim();
    return truncated_ ? kProcessOutputTruncated + text_ : std::move(text_);
  }

 private:
  void trim() {
    text_.erase(0, text_.size() - kProcessOutputLimit);
    truncated_ = true;
  }
  std::string text_;
  bool truncated_ = false;
};

// Reads what is available without blocking; returns false at end of file.
bool drain(int fd, OutputTail& out) {
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return false;
    } else if (errno == EINTR) {
      continue;
    } else {
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }
}

bool has_exited(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT leaves the child a zombie, so its pid (and process group id) cannot be reused before
  // the group is killed below.
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail("run_process: waitpid: {}", std::strerror(errno));
  return status;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const ProcessOptions& options) {
  if (argv.empty()) fail("run_process: empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment is built here: after fork only async-signal-safe calls are allowed.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto named = [&](const auto& kv) { return entry.substr(0, entry.find('=')) == kv.first; };
    if (std::none_of(options.env.begin(), options.env.end(), named)) env_text.emplace_back(entry);
  }
  for (const auto& [name, value] : options.env) env_text.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string cwd_text = options.cwd.string();
  const std::string stdin_text = options.stdin_file.string();
  const std::string stderr_text = options.stderr_file.string();

  Fd out_read, out_write, status_read, status_write;
  make_pipe(out_read, out_write);
  make_pipe(status_read, status_write);

  const auto start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) fail("run_process: fork for \"{}\": {}", argv[0], std::strerror(errno));
  if (pid == 0)
    exec_child(args.data(), envp.data(), cwd_text.empty() ? nullptr : cwd_text.c_str(),
               stdin_text.empty() ? nullptr : stdin_text.c_str(),
               stderr_text.empty() ? nullptr : stderr_text.c_str(), out_write.get(),
               status_write.get());
  ::setpgid(pid, pid);  // also in the parent, so a kill right after fork reaches the group
  out_write.reset();
  status_write.reset();

  ProcessResult result;
  OutputTail output;
  // The status pipe closes on a successful exec (close-on-exec) or carries the reason it failed.
  ChildFailure failure{};
  ssize_t got;
  do {
    got = ::read(status_read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  status_read.reset();
  if (got == static_cast<ssize_t>(sizeof failure)) {
    const std::string what = failure.stage == 0
                                 ? fmt::format("cannot change directory to \"{}\"", cwd_text)
                                 : fmt::format("cannot run \"{}\"", argv[0]);
    const std::string message = fmt::format("kh: {}: {}\n", what, std::strerror(failure.error));
    output.append(message.data(), message.size());
  }

  ::fcntl(out_read.get(), F_SETFL, ::fcntl(out_read.get(), F_GETFL) | O_NONBLOCK);
  const auto deadline = start + timeout;
  bool eof = false;
  bool exited = false;
  Clock::time_point exited_at;
  while (true) {
    if (!exited && has_exited(pid)) {
      exited = true;
      exited_at = Clock::now();
    }
    if (exited && eof) break;
    const auto now = Clock::now();
    if (now >= deadline) {
      result.timed_out = !exited;
      break;
    }
    if (exited && now - exited_at > kStragglerGrace) break;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int wait_ms = static_cast<int>(std::min<long long>(left, eof ? 1 : kPollMs));
    pollfd p{out_read.get(), POLLIN, 0};
    if (::poll(&p, eof ? 0 : 1, wait_ms) > 0 && !drain(out_read.get(), output)) eof = true;
  }
  if (!exited || !eof) {
    // Timed out, or something the child started still holds the output: end the whole group.
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // in case the child left the group
    if (!eof) {
      pollfd p{out_read.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) drain(out_read.get(), output);
    }
  }
  out_read.reset();
  const int status = reap(pid);
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.output = output.finish();
  if (result.timed_out) {
    result.output += fmt::format("[killed after {:.1f} s: time limit {:.1f} s]\n", result.seconds,
                                 std::chrono::duration<double>(timeout).count());
  }
  return result;
}

std::string self_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail("cannot find kh's own executable: {}", ec.message());
  return p.string();
}

std::optional<std::filesystem::path> find_program(const std::string& name) {
  auto executable = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  std::string_view dirs = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const auto candidate = std::filesystem::path(dir.empty() ? "." : std::string(dir)) / name;
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace kh
