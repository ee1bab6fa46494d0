// FlashInfer-Bench traces: a workload, optionally with the solution evaluated on it and the
// evaluation (status, environment, correctness, performance). Infinite and NaN errors are written
// as the JSON strings "Infinity" and "NaN", as FlashInfer-Bench writes them.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "kh/core/json_io.h"
#include "kh/spec/workload.h"

namespace kh {

enum class EvalStatus {
  kPassed,
  kIncorrectShape,
  kIncorrectNumerical,
  kIncorrectDtype,
  kRuntimeError,
  kCompileError,
  kTimeout,
};

std::string_view status_name(EvalStatus s);  // "PASSED", "INCORRECT_NUMERICAL", ...
std::optional<EvalStatus> status_from_name(std::string_view name);

struct Correctness {
  double max_relative_error = 0;
  double max_absolute_error = 0;
  Json extra;  // null or an object
};

struct Performance {
  double latency_ms = 0;
  double reference_latency_ms = 0;
  double speedup_factor = 0;
};

struct Evaluation {
  EvalStatus status = EvalStatus::kPassed;
  std::string hardware;
  std::map<std::string, std::string> libs;
  std::string timestamp;
  std::string log;
  std::optional<Correctness> correctness;  // PASSED and INCORRECT_NUMERICAL
  std::optional<Performance> performance;  // PASSED only
};

struct Trace {
  std::string definition;
  Workload workload;
  std::optional<std::string> solution;
  std::optional<Evaluation> evaluation;

  static Trace from_json(const JsonCursor& cursor);
  Json to_json() const;
};

/// A float that may be infinite or NaN, written the FlashInfer-Bench way.
Json json_float(double v);
double parse_json_float(const JsonCursor& c);

}  // namespace kh
