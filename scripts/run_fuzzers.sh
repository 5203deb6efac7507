#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded number of runs, seeded from the msprobe fixtures
# (read in place from ../shared) plus a scratch corpus, each for at most RUNS runs or 45 s.
set -euo pipefail
build=${1:-build-fuzz}
runs=${2:-200000}
root=$(cd "$(dirname "$0")/.." && pwd)
fx="$root/../shared/fixtures/msprobe"
work="$build/fuzz-corpus"
mkdir -p "$work"

seeds_for() {
  case "$1" in
    dump_json_fuzz) echo "$fx/synthetic_edge_cases/statistics $fx/synthetic_edge_cases/md5 \
      $fx/malformed_dump_json $fx/layer_mapping_min $fx/acc_check_input" ;;
    stack_construct_fuzz) echo "$fx/cross_framework_ms_vs_pt $fx/layer_mapping_min" ;;
    compare_input_fuzz) echo "$fx/configs" ;;
    capture_config_fuzz) echo "$fx/configs" ;;
    mapping_yaml_fuzz) echo "$fx/configs $fx/cross_framework_ms_vs_pt $fx/layer_mapping_min \
      $fx/golden_compare_outputs_mstt/xf_ms_vs_pt_layer_mapping" ;;
    acc_results_csv_fuzz) echo "$fx/golden_compare_outputs_mstt/synth_statistics $fx/legacy_compare_results" ;;
    npy_fuzz) echo "$fx/synthetic_edge_cases/tensor/npu/dump_tensor_data $fx/acc_check_input/mindspore" ;;
    pt_fuzz) echo "$root/tests/fuzz/seeds/pt" ;;
    pt_state_dict_fuzz) echo "$root/tests/fuzz/seeds/pt_state_dict $root/tests/fuzz/seeds/pt" ;;
    safetensors_fuzz) echo "$root/tests/fuzz/seeds/safetensors" ;;
    config_pack_fuzz) echo "$root/tests/fuzz/seeds/config_pack" ;;
    vis_db_fuzz) echo "$root/tests/fuzz/seeds/vis_db $fx/golden_graph_mstt" ;;
    shard_summary_fuzz) echo "$root/tests/fuzz/seeds/shard_summary" ;;
    monitor_config_fuzz) echo "$root/tests/fuzz/seeds/monitor_config" ;;
    monitor_anomaly_fuzz) echo "$root/tests/fuzz/seeds/monitor_anomaly" ;;
    monitor_csv_fuzz) echo "$root/tests/fuzz/seeds/monitor_csv" ;;
    grad_summary_fuzz) echo "$root/tests/fuzz/seeds/grad_summary" ;;
    ms_dump_fuzz) echo "$root/tests/fuzz/seeds/ms_dump" ;;
    *) echo "" ;;
  esac
}

status=0
for bin in "$build"/bin/*_fuzz; do
  name=$(basename "$bin")
  mkdir -p "$work/$name"
  seeds=()
  for d in $(seeds_for "$name"); do [ -d "$d" ] && seeds+=("$d"); done
  echo "fuzz: $name -runs=$runs"
  if ! "$bin" -runs="$runs" -max_total_time=45 -max_len=65536 -rss_limit_mb=2048 -artifact_prefix="$work/$name-" \
      "$work/$name" "${seeds[@]}" > "$work/$name.log" 2>&1; then
    echo "fuzz: $name FAILED"; tail -40 "$work/$name.log"; status=1
  else
    grep -E "^#[0-9]+.*DONE" "$work/$name.log" | tail -1 || true
  fi
done
exit $status
