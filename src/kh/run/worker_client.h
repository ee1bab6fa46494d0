// The coordinator's handle on one worker process: starts it, sends requests, waits for replies
// while enforcing a per-call timeout (between the worker's call_start and call_end events) and
// an overall deadline, and kills it when it hangs. A crash shows up as the end of the stream; the
// reply then says how the process ended and carries the tail of its log.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "kh/core/json_io.h"

namespace kh {

struct WorkerReply {
  enum class Kind { kReply, kTimeout, kCrash };
  Kind kind = Kind::kReply;
  Json body;           // kReply: the worker's reply object
  std::string detail;  // kTimeout / kCrash: what happened ("killed by signal 11 (SIGSEGV)")
};

class WorkerClient {
 public:
  /// `command` is the worker's argv (e.g. {kh, "worker", "--backend", "cpu"}, possibly under
  /// compute-sanitizer); its stderr and stray stdout go to `log_file`.
  WorkerClient(std::vector<std::string> command, std::filesystem::path log_file);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  /// Starts the process and waits for its "ready" event.
  void start(std::chrono::milliseconds timeout);
  bool running() const { return pid_ > 0; }
  WorkerReply request(Json request, std::chrono::milliseconds call_timeout,
                      std::chrono::milliseconds total_timeout);
  /// Asks the worker to quit, waits briefly, then kills it.
  void stop();
  /// The last `bytes` of the worker's log.
  std::string log_tail(std::size_t bytes = 4000) const;
  const std::filesystem::path& log_file() const { return log_file_; }

 private:
  enum class ReadResult { kLine, kTimeout, kEof };
  ReadResult read_line(std::chrono::steady_clock::time_point deadline, std::string& line);
  std::string reap(bool kill_first);  // waits for the process; returns how it ended

  std::vector<std::string> command_;
  std::filesystem::path log_file_;
  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string buffer_;
  long next_id_ = 1;
};

}  // namespace kh
