#!/usr/bin/env bash
# Issue 33's GPU checks and measurements in one run, for a session that is lent a GPU machine:
# the CUDA tests, then the capture benchmark with the multi-tensor launches on and off alternating
# (NUMPROBE_BATCH_DEVICE_STATS), the idle steps, and the statistics kernel by itself. numprobe must
# already be built for that machine's torch (docs/capture.md, "CUDA and torch 2.x"); the first
# argument is that torch's Python, NUMPROBE_PYTHONPATH the built package if it is not python/.
#   bash bench/gpu_check.sh /path/to/python
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)"; then
  echo "gpu_check: $PY's torch sees no CUDA device: nothing to measure here" >&2
  exit 3
fi
"$PY" -c "import torch; print('gpu_check:', torch.__version__, torch.cuda.get_device_name(0))"
"$PY" -m pytest -q -p no:cacheprovider tests/python/test_cuda.py
for run in 1 2; do
  for batch in 1 0; do
    echo "== NUMPROBE_BATCH_DEVICE_STATS=$batch (run $run)"
    NUMPROBE_BATCH_DEVICE_STATS=$batch "$PY" bench/capture_bench.py --device=cuda \
      --only=encoder,per-op --levels=L1,mix --rounds=3 --steps=10 --no-msprobe
  done
done
"$PY" bench/capture_bench.py --device=cuda --only=idle --rounds=3 --steps=10
"$PY" bench/cuda_stats_bench.py
