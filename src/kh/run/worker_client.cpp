#include "kh/run/worker_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "kh/core/error.h"

namespace kh {
namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("was killed by signal {} (SIG{})", sig, abbrev ? abbrev : "?");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

WorkerClient::WorkerClient(std::vector<std::string> command, std::filesystem::path log_file)
    : command_(std::move(command)), log_file_(std::move(log_file)) {}

WorkerClient::~WorkerClient() {
  if (pid_ > 0) reap(true);
}

void WorkerClient::start(std::chrono::milliseconds timeout) {
  // A worker that dies while we write to it must not take the coordinator with it.
  ::signal(SIGPIPE, SIG_IGN);
  if (pid_ > 0) reap(true);
  if (log_file_.has_parent_path()) std::filesystem::create_directories(log_file_.parent_path());
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    fail("cannot create pipes for a worker: {}", std::strerror(errno));
  const int log = ::open(log_file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) fail("{}: cannot open the worker log: {}", log_file_.string(), std::strerror(errno));
  std::vector<char*> argv;
  for (auto& a : command_) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) fail("cannot start a worker: {}", std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so a kill reaches anything it started
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execvp(argv[0], argv.data());  // PATH lookup: the sanitizer is named, not located
    dprintf(STDERR_FILENO, "cannot execute %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(log);
  pid_ = pid;
  to_worker_ = in[1];
  from_worker_ = out[0];
  buffer_.clear();
  std::string line;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const ReadResult r = read_line(deadline, line);
    if (r == ReadResult::kTimeout) {
      reap(true);
      fail("the worker did not start within {} ms; log {}: {}", timeout.count(), log_file_.string(),
           log_tail(800));
    }
    if (r == ReadResult::kEof) {
      const std::string how = reap(false);
      fail("the worker {} while starting; log {}: {}", how, log_file_.string(), log_tail(800));
    }
    const Json j = parse_json(line, "worker");
    if (j.value("event", "") == "ready") return;
  }
}

WorkerClient::ReadResult WorkerClient::read_line(Clock::time_point deadline, std::string& line) {
  while (true) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return ReadResult::kLine;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return ReadResult::kTimeout;
    pollfd p{from_worker_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_worker_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadResult::kEof;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

WorkerReply WorkerClient::request(Json request, std::chrono::milliseconds call_timeout,
                                  std::chrono::milliseconds total_timeout) {
  if (pid_ <= 0) fail("internal error: request to a worker that is not running");
  const long id = next_id_++;
  request["id"] = id;
  WorkerReply reply;
  if (!write_all(to_worker_, request.dump() + "\n")) {
    reply.kind = WorkerReply::Kind::kCrash;
    reply.detail = "the worker " + reap(false) + " before taking the request";
    return reply;
  }
  const auto total_deadline = Clock::now() + total_timeout;
  auto deadline = total_deadline;
  bool in_call = false;
  std::string line;
  while (true) {
    const ReadResult r = read_line(deadline, line);
    if (r == ReadResult::kTimeout) {
      reply.kind = WorkerReply::Kind::kTimeout;
      reply.detail =
          in_call
              ? fmt::format("a call of the candidate ran longer than {} ms", call_timeout.count())
              : fmt::format("the request took longer than {} ms", total_timeout.count());
      reap(true);
      return reply;
    }
    if (r == ReadResult::kEof) {
      reply.kind = WorkerReply::Kind::kCrash;
      reply.detail = std::string("the worker ") + reap(false) +
                     (in_call ? " during a call of the candidate" : "");
      return reply;
    }
    const Json j = parse_json(line, "worker " + log_file_.string());
    const std::string event = j.value("event", "");
    if (event == "call_start") {
      in_call = true;
      deadline = std::min(total_deadline, Clock::now() + call_timeout);
    } else if (event == "call_end") {
      in_call = false;
      deadline = total_deadline;
    } else if (j.contains("id") && j["id"] == id) {
      reply.body = j;
      return reply;
    }
  }
}

void WorkerClient::stop() {
  if (pid_ <= 0) return;
  write_all(to_worker_, Json{{"op", "quit"}, {"id", next_id_++}}.dump() + "\n");
  std::string line;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (read_line(deadline, line) == ReadResult::kLine) {
  }
  reap(true);
}

std::string WorkerClient::reap(bool kill_first) {
  if (pid_ <= 0) return "was not running";
  if (kill_first) ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  if (!kill_first) ::kill(-pid_, SIGKILL);  // anything the worker left behind in its group
  ::close(to_worker_);
  ::close(from_worker_);
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
  return describe_exit(status);
}

std::string WorkerClient::log_tail(std::size_t bytes) const {
  std::ifstream in(log_file_, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(in.tellg());
  const std::size_t start = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string tail(size - start, '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail;
}

}  // namespace kh
