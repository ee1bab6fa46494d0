// The coordinator-worker protocol: newline-delimited JSON over the worker's stdin and stdout.
//
//   coordinator -> worker   {"id": n, "op": "load", "library": path | "builtin:...", "entry":
//                            symbol (a builtin: the definition), "root": dataset,
//                            "slot": "peer" (optional: a paired gate's second candidate)}
//                            library may be a Python candidate's python_candidate.json or
//                            "builtin:definition_reference" (Python worker only)
//                           {"id": n, "op": "load", "slot": "oracle", "root", "definition"}
//                            (Python worker only): later trials are judged by the definition's
//                            PyTorch reference
//                           {"id": n, "op": "trial", "root", "definition", "workload" (uuid),
//                            "workload_json" (optional: the workload itself; else looked up by
//                            uuid in the dataset at root), "trial",
//                            "seed", "variant", "official", "sanitize",
//                            "cpu_reference"}
//                           {"id": n, "op": "time", "root", "definition", "workload", "trial",
//                            "seed", "variant", "method", "warmup", "iterations",
//                            "timeline" (optional: reply with the last timed call's activities)}
//                           {"id": n, "op": "time_pair", "root", "definition", "workload",
//                            "trial", "seed", "variant", "method", "warmup", "order": [0|1...]}
//                           {"id": n, "op": "quit"}
//   worker -> coordinator   {"event": "call_start"} / {"event": "call_end"}   around each call
//                           {"id": n, "ok": true, ...result} | {"id": n, "ok": false,
//                            "error": message, "kind": "load" | "device" | "input" | "internal"}
//                           time replies: {"samples": [{"seconds", "sm_clock_mhz",
//                            "throttle_reasons"}], "error": "" or the timer's failure,
//                            "environment": {...}, "cost": {"bytes", "flops", "flop_kind"},
//                            "timeline": [{"kind", "name", "stream", "start_seconds",
//                            "duration_seconds"}] when asked (cupti only; else empty)}
//                           time_pair replies: "samples": [[candidate's], [peer's]] in the
//                            order taken, else as time replies
//
// The worker keeps the real stdout for the protocol and points file descriptor 1 at its log,
// so a candidate that prints cannot corrupt the stream.
#pragma once

#include <string>

#include "kh/check/check_result.h"
#include "kh/core/json_io.h"
#include "kh/run/python_callables.h"

namespace kh {

inline constexpr const char* kEventCallStart = "call_start";
inline constexpr const char* kEventCallEnd = "call_end";

Json check_result_json(const CheckResult& r);
CheckResult check_result_from_json(const Json& j);

/// Runs the worker loop on stdin/stdout until "quit" or end of input; returns the exit code.
/// `python`: the Python worker's callbacks (kh_worker_main), none in `kh worker`.
int run_worker(const std::string& backend, int device, const PythonHooks& python = {});

}  // namespace kh
