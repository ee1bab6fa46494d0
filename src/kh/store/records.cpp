#include "kh/store/records.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"

namespace kh {

std::string_view sweep_item_state_name(SweepItemState s) {
  switch (s) {
    case SweepItemState::kPending:
      return "pending";
    case SweepItemState::kPassed:
      return "passed";
    case SweepItemState::kFailed:
      return "failed";
  }
  return "pending";
}

SweepItemState parse_sweep_item_state(std::string_view name) {
  if (name == "pending") return SweepItemState::kPending;
  if (name == "passed") return SweepItemState::kPassed;
  if (name == "failed") return SweepItemState::kFailed;
  fail("sweep item state \"{}\": expected pending, passed or failed", name);
}

std::string utc_timestamp() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

namespace {

Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

}  // namespace

Json evaluation_identity_json(const EvaluationRecord& e) {
  Json summary = nullptr;
  if (e.summary) {
    const SampleSummary& s = *e.summary;
    summary = {
        {"latency", s.latency}, {"median", s.median}, {"mean", s.mean}, {"p95", s.p95},
        {"min", s.min},         {"max", s.max},       {"n", s.n},       {"throttled", s.throttled}};
  }
  return {{"candidate", e.candidate},
          {"definition", e.definition},
          {"workload", e.workload},
          {"sweep", e.sweep},
          {"attempt", e.attempt},
          {"status", e.status},
          {"max_absolute_error", e.max_absolute_error},
          {"max_relative_error", e.max_relative_error},
          {"matched_ratio", e.matched_ratio},
          {"message", e.message},
          {"log_tail", e.log_tail},
          {"trials", e.trials},
          {"nondeterministic", e.nondeterministic},
          {"options", e.options},
          {"timing_method", e.timing_method},
          {"summary", summary},
          {"samples", e.samples},
          {"cost", e.cost},
          {"floor_seconds", optional_json(e.floor_seconds)},
          {"fraction_of_floor", optional_json(e.fraction_of_floor)},
          {"environment", e.environment},
          {"reference_latency", optional_json(e.reference_latency)},
          {"reference_label", e.reference_label},
          {"seconds", e.seconds},
          {"created_at", e.created_at}};
}

namespace {

// Invalid UTF-8 replaced, as the store replaces it before storing (store_rows.h json_text).
std::string identity_hash(const Json& j) {
  return sha256_hex(j.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace));
}

}  // namespace

std::string evaluation_id(const EvaluationRecord& e) {
  return identity_hash(evaluation_identity_json(e));
}

std::string noise_floor_id(const NoiseFloorRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"candidate", r.candidate},
                        {"gpu", r.gpu},
                        {"timing_method", r.timing_method},
                        {"environment", r.environment},
                        {"minimum_effect", r.minimum_effect},
                        {"distribution_spread", r.distribution_spread},
                        {"median_workload_spread", r.median_workload_spread},
                        {"max_workload_spread", r.max_workload_spread},
                        {"workload_spread", r.workload_spread},
                        {"options", r.options},
                        {"created_at", r.created_at}});
}

std::string gate_id(const GateRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"candidate_a", r.candidate_a},
                        {"candidate_b", r.candidate_b},
                        {"stage", r.stage},
                        {"gpu", r.gpu},
                        {"timing_method", r.timing_method},
                        {"environment", r.environment},
                        {"objective", r.objective},
                        {"min_effect", r.min_effect},
                        {"estimate", r.estimate},
                        {"lo", r.lo},
                        {"hi", r.hi},
                        {"verdict", r.verdict},
                        {"both_correct", r.both_correct},
                        {"result", r.result},
                        {"samples", r.samples},
                        {"options", r.options},
                        {"created_at", r.created_at}});
}

std::string decision_id(const DecisionRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"candidate", r.candidate},
                        {"against", r.against},
                        {"decision", r.decision},
                        {"reason", r.reason},
                        {"evidence", r.evidence},
                        {"created_at", r.created_at}});
}

std::string pending_promotion_id(const PendingPromotionRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"candidate", r.candidate},
                        {"against", r.against},
                        {"reason", r.reason},
                        {"evidence", r.evidence},
                        {"requested_by", r.requested_by},
                        {"created_at", r.created_at}});
}

std::string note_id(const NoteRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"text", r.text},
                        {"reference", r.reference},
                        {"author", r.author},
                        {"created_at", r.created_at}});
}

std::string profile_id(const ProfileRecord& r) {
  return identity_hash({{"definition", r.definition},
                        {"candidate", r.candidate},
                        {"workload", r.workload},
                        {"gpu", r.gpu},
                        {"span_seconds", r.span_seconds},
                        {"bottleneck", r.bottleneck},
                        {"signature", r.signature},
                        {"profile_blob", r.profile_blob},
                        {"ncu_blob", r.ncu_blob},
                        {"created_at", r.created_at}});
}

}  // namespace kh
