// Progress of a long gate or promotion: on a terminal one line rewritten in place; otherwise (a
// log file) a line when the phase changes and at most every kLogInterval, so a log shows where a
// killed run was without being flooded.
#pragma once

#include <chrono>
#include <iostream>
#include <string>

namespace kh::cli {

class ProgressLine {
 public:
  static constexpr std::chrono::seconds kLogInterval{30};

  /// `terminal`: stderr is a terminal; `quiet`: print nothing (--json on a terminal).
  ProgressLine(bool terminal, bool quiet) : terminal_(terminal), quiet_(quiet) {}

  /// `phase` is the text up to the counter ("full gate: timing"); `text` the whole line.
  void show(const std::string& phase, const std::string& text) {
    if (quiet_) return;
    if (terminal_) {
      std::cerr << "\r\033[K" << text << std::flush;
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (phase == phase_ && now - last_ < kLogInterval) return;
    phase_ = phase;
    last_ = now;
    std::cerr << text << "\n" << std::flush;
  }
  void clear() const {
    if (terminal_ && !quiet_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool terminal_, quiet_;
  std::string phase_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace kh::cli
