#!/usr/bin/env bash
# Cross-checks kh's CPU references against the definitions' own PyTorch references on a sample
# of official workloads (small ones, one long GDN prefill) and adversarial variants. Run on a
# machine with torch (the GPU machine), from the repository root, after building kh:
#   tools/xcheck_sample.sh OUT_DIR
# Writes OUT_DIR/xcheck.json and OUT_DIR/xcheck.log; exit status 0 iff every file agrees.
set -euo pipefail
out="${1:?usage: tools/xcheck_sample.sh OUT_DIR}"
kh="${KH:-build/default/kh}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# definition | workload uuid | file label | variant (optional)
samples=(
  "gdn_decode_qk4_v8_d128_k_last|901e5104-dccb-4c3f-ae13-ef4d31a4d456|decode_b1|"
  "gdn_decode_qk4_v8_d128_k_last|ec9d2340-6d13-40e4-a6fe-4483a1cacd0d|decode_b4|"
  "gdn_decode_qk4_v8_d128_k_last|901e5104-dccb-4c3f-ae13-ef4d31a4d456|decode_b1_absent_state|absent_state"
  "gdn_prefill_qk4_v8_d128_k_last|77daf91d-0660-4c4b-8c32-336a69281cd9|prefill_t6|"
  "gdn_prefill_qk4_v8_d128_k_last|d2b5a221-f890-4cdd-83bc-bdbff1f0d0b0|prefill_t82_n3|"
  "gdn_prefill_qk4_v8_d128_k_last|d2b5a221-f890-4cdd-83bc-bdbff1f0d0b0|prefill_t82_n3_zero_length|zero_length"
  "gdn_prefill_qk4_v8_d128_k_last|07aa7922-1848-48a9-830a-54216b5553b3|prefill_t5709_n2|"
  "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64|0c23b10c7b7645719517828c12eaa1d2|attn_t1|"
  "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64|9d4a5f21268e484ea05a2f2af91d9fa7|attn_t2|"
  "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64|ae4219a95f044f45bd10e17ab63c6e8f|attn_t7_scattered|"
  "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64|9d4a5f21268e484ea05a2f2af91d9fa7|attn_t2_all_padding|all_padding"
  "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64|30cecff1-7ea4-474b-90fc-7f4a87206d8e|indexer_b1_p1|"
  "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64|d8a73470-cfa1-49ad-aba6-d9b99c0c5b2d|indexer_b4_p34|"
  "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64|70d53807-f4ba-4c16-a0be-8a1f9137e8e6|indexer_b12_p82|"
  "dsa_topk_indexer_fp8_h64_d128_topk2048_ps64|d8a73470-cfa1-49ad-aba6-d9b99c0c5b2d|indexer_b4_p34_ties|ties"
  "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048|e05c6c03-5603-4a1c-b34c-dcce0ecaeea4|moe_t1|"
  "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048|b8f4f012-a32e-4356-b4e1-7665b3d598af|moe_t7|"
  "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048|b8f4f012-a32e-4356-b4e1-7665b3d598af|moe_t7_one_expert|one_expert"
)

status=0
for s in "${samples[@]}"; do
  IFS='|' read -r def uuid label variant <<<"$s"
  "$kh" gen --root . -d "$def" -w "$uuid" --reference -o "$work/$label.safetensors" \
    ${variant:+--variant "$variant"} | tee -a "$out/xcheck.log"
  # One file at a time: the MoE and attention files are 0.6-1.5 GB each.
  python3 tools/xcheck_reference.py --definitions definitions --json "$out/$label.json" \
    "$work/$label.safetensors" 2>&1 | tee -a "$out/xcheck.log" || status=1
  rm -f "$work/$label.safetensors"
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
parts = sorted(out.glob("*.json"))
merged = {"results": []}
for p in parts:
    if p.name == "xcheck.json":
        continue
    d = json.loads(p.read_text())
    merged.update({k: v for k, v in d.items() if k != "results"})
    merged["results"] += d["results"]
    p.unlink()
(out / "xcheck.json").write_text(json.dumps(merged, indent=2))
ok = sum(r["agree"] for r in merged["results"])
print(f"{ok} passed, {len(merged['results']) - ok} failed")
PY
exit $status
