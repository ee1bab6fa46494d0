#include "kh/gen/operator_inputs.h"

#include "kh/core/error.h"

namespace kh {

std::int64_t GenContext::axis(const std::string& name) const {
  auto it = axes.find(name);
  if (it == axes.end()) fail("workload {}: axis '{}' has no value", workload.uuid, name);
  return it->second;
}

std::int64_t GenContext::hint_int(const std::string& key, std::int64_t fallback) const {
  auto it = workload.hints.find(key);
  if (it == workload.hints.end()) return fallback;
  if (!it->is_number_integer())
    fail("workload {}: hint kh.{} must be an integer, got {}", workload.uuid, key, it->dump());
  return it->get<std::int64_t>();
}

std::string GenContext::hint_string(const std::string& key, const std::string& fallback) const {
  auto it = workload.hints.find(key);
  if (it == workload.hints.end()) return fallback;
  if (!it->is_string())
    fail("workload {}: hint kh.{} must be a string, got {}", workload.uuid, key, it->dump());
  return it->get<std::string>();
}

void require_full_range(const std::string& name, const HostTensor& t, std::int64_t begin,
                        std::int64_t end) {
  if (begin != 0 || end != t.numel())
    fail("input '{}' is generated as a whole; a partial range [{}, {}) of {} is not supported",
         name, begin, end, t.numel());
}

std::unique_ptr<OperatorInputs> make_operator_inputs(const Definition& def) {
  // Matched by name prefix: the same generators serve other shapes of the same operator family.
  const std::string& n = def.name;
  if (n.rfind("gdn_decode", 0) == 0) return make_gdn_inputs(false);
  if (n.rfind("gdn_prefill", 0) == 0) return make_gdn_inputs(true);
  if (n.rfind("dsa_sparse_attention", 0) == 0) return make_dsa_attention_inputs();
  if (n.rfind("dsa_topk_indexer", 0) == 0) return make_dsa_indexer_inputs();
  if (n.rfind("moe_fp8_block_scale", 0) == 0) return make_moe_inputs();
  return nullptr;
}

}  // namespace kh
