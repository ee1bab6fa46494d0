#include "kh/roofline/call_cost.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kh/core/error.h"
#include "kh/roofline/call_cost_models.h"

namespace kh {
namespace roofline {
namespace {

const TensorDecl& declared_tensor(const Definition& def, std::string_view tensor) {
  const std::string name(tensor);
  if (const TensorDecl* decl = def.find_input(name)) return *decl;
  if (const TensorDecl* decl = def.find_output(name)) return *decl;
  fail("{}: the call-cost model needs tensor '{}', which the definition does not declare", def.name,
       tensor);
}

}  // namespace

double element_bytes(const Definition& def, std::string_view tensor) {
  return static_cast<double>(dtype_size(declared_tensor(def, tensor).dtype));
}

double declared_bytes(const Definition& def, const AxisValues& axes, std::string_view tensor) {
  const TensorDecl& decl = declared_tensor(def, tensor);
  return static_cast<double>(storage_bytes(decl.dtype, shape_numel(def.shape_of(decl, axes))));
}

}  // namespace roofline

std::string_view flop_kind_name(FlopKind kind) {
  switch (kind) {
    case FlopKind::kBf16:
      return "bf16";
    case FlopKind::kFp8:
      return "fp8";
    case FlopKind::kFp32:
      return "fp32";
  }
  return "unknown";
}

CallCost minimal_call_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs) {
  using Model = CallCost (*)(const Definition&, const AxisValues&, const InputSet&);
  struct Entry {
    std::string_view definition;
    Model model;
  };
  static constexpr Entry kModels[] = {
      {"dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64", roofline::dsa_sparse_attention_cost},
      {"dsa_topk_indexer_fp8_h64_d128_topk2048_ps64", roofline::dsa_topk_indexer_cost},
      {"gdn_decode_qk4_v8_d128_k_last", roofline::gdn_decode_cost},
      {"gdn_prefill_qk4_v8_d128_k_last", roofline::gdn_prefill_cost},
      {"moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048", roofline::moe_cost},
  };
  for (const Entry& entry : kModels)
    if (entry.definition == def.name) return entry.model(def, axes, inputs);
  fail("roofline: no call-cost model for definition '{}'", def.name);
}

double floor_seconds(const CallCost& cost, const MachineCeilings& ceilings) {
  const auto require_rate = [&](double rate, std::string_view field) {
    if (!std::isfinite(rate) || rate <= 0)
      fail("ceilings of '{}': {} is {}, expected a finite rate > 0", ceilings.gpu, field, rate);
    return rate;
  };
  double flop_rate = 0;
  switch (cost.kind) {
    case FlopKind::kBf16:
      flop_rate = require_rate(ceilings.bf16_flops_per_second, "bf16_flops_per_second");
      break;
    case FlopKind::kFp8:
      flop_rate = require_rate(ceilings.fp8_flops_per_second, "fp8_flops_per_second");
      break;
    case FlopKind::kFp32:
      flop_rate = require_rate(ceilings.fp32_flops_per_second, "fp32_flops_per_second");
      break;
  }
  const double copy_rate = require_rate(ceilings.copy_bytes_per_second, "copy_bytes_per_second");
  return std::max(cost.bytes / copy_rate, cost.flops / flop_rate);
}

double fraction_of_floor(double measured_seconds, double floor_seconds) {
  if (!std::isfinite(measured_seconds) || measured_seconds <= 0)
    fail("fraction of floor: measured time {} s, expected a finite time > 0", measured_seconds);
  if (!std::isfinite(floor_seconds) || floor_seconds < 0)
    fail("fraction of floor: floor {} s, expected a finite time >= 0", floor_seconds);
  return floor_seconds / measured_seconds;
}

Json call_cost_json(const CallCost& cost) {
  return {{"bytes", cost.bytes},
          {"flops", cost.flops},
          {"flop_kind", flop_kind_name(cost.kind)},
          {"note", cost.note}};
}

CallCost call_cost_from_json(const Json& j) {
  const JsonCursor c(j, "call cost");
  CallCost cost;
  cost.bytes = c.at("bytes").as_number();
  cost.flops = c.at("flops").as_number();
  const std::string kind = c.at("flop_kind").as_string();
  if (kind == "fp8")
    cost.kind = FlopKind::kFp8;
  else if (kind == "bf16")
    cost.kind = FlopKind::kBf16;
  else if (kind == "fp32")
    cost.kind = FlopKind::kFp32;
  else
    c.at("flop_kind").fail_here("expected \"bf16\", \"fp8\" or \"fp32\", got \"" + kind + "\"");
  if (auto note = c.find("note")) cost.note = note->as_string();
  return cost;
}

}  // namespace kh
