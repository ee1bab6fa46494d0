// The roofline floor of one call of an operator (DESIGN.md, "Kernel rules": every route has a
// roofline note). A call's cost is the minimal traffic to and from HBM and the arithmetic it needs,
// both computed from the call's actual inputs, not only its axes: which cache rows the sparse
// indices select, which pages the block table reaches, which experts the routing activates, whether
// a GDN state is given. The floor is the larger of the two times on a machine's measured ceilings.
#pragma once

#include <string>
#include <string_view>

#include "kh/core/json_io.h"
#include "kh/gen/input_set.h"
#include "kh/roofline/ceilings.h"
#include "kh/spec/definition.h"

namespace kh {

/// Which ceiling the FLOPs of a call are divided by.
enum class FlopKind { kBf16, kFp8, kFp32 };

std::string_view flop_kind_name(FlopKind kind);  // "bf16", "fp8", "fp32"

struct CallCost {
  double bytes = 0;  // minimal bytes read from and written to HBM by one call
  double flops = 0;  // arithmetic of one call, counted as the model's comment says
  FlopKind kind = FlopKind::kFp32;
  std::string note;  // what was counted, with the input-dependent counts (for reports)
};

/// The cost of one call of `def` on these inputs (axes: every axis value, const ones included).
/// Dispatches on the definition's name; an error names a definition without a model, or an input
/// that is missing, mis-shaped or out of range (an index past the cache, a page past num_pages).
CallCost minimal_call_cost(const Definition& def, const AxisValues& axes, const InputSet& inputs);

/// {"bytes", "flops", "flop_kind", "note"}, as workers send it and results record it.
Json call_cost_json(const CallCost& cost);
/// Reads what call_cost_json wrote; an error names the field.
CallCost call_cost_from_json(const Json& j);

/// max(bytes / copy bandwidth, flops / the rate of the cost's kind), in seconds. Launch latency is
/// not added: the floor is the roofline's, and the ceilings carry the latencies separately.
double floor_seconds(const CallCost& cost, const MachineCeilings& ceilings);

/// floor / measured: 1 means the call runs at its floor. measured must be > 0.
double fraction_of_floor(double measured_seconds, double floor_seconds);

}  // namespace kh
