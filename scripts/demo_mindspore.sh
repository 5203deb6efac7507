#!/usr/bin/env bash
# make demo-mindspore: the GPT-style twin of examples/mindspore captured in MindSpore (PyNative, CPU)
# and in PyTorch from the same .npy weights, compared with the built-in MindSpore->PyTorch mapping;
# then a MindSpore run whose last block's LayerNorm has eps 1e-2 instead of 1e-5, its first
# divergence named. Arguments: numprobe binary, output dir, torch python, MindSpore python.
set -euo pipefail
BIN=$1 OUT=$2 TORCH_PY=$3 MS_PY=$4
ROOT=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$OUT" && mkdir -p "$OUT"
if ! "$TORCH_PY" -c "import torch" 2>/dev/null; then
  echo "demo-mindspore: SKIPPED: $TORCH_PY cannot import torch (the PyTorch half needs it)"; exit 0
fi
echo "== PyTorch half (writes the shared weights and batch as .npy) =="
PYTHONPATH=$ROOT/python "$TORCH_PY" "$ROOT/examples/mindspore/gpt_twin_pt.py" --weights "$OUT/weights" --out "$OUT/pt"
echo "== MindSpore half, clean and with a LayerNorm eps of 1e-2 in the last block =="
for fault in "" ln_eps; do
  PYTHONPATH=$ROOT/build-mindspore/python "$MS_PY" "$ROOT/examples/mindspore/gpt_twin_ms.py" \
    --weights "$OUT/weights" --out "$OUT/ms_${fault:-clean}" --fault "$fault" 2>&1 | grep -v "^\[WARNING\]" || true
done
echo
echo "== compare: MindSpore (target) against PyTorch (golden), -am -cm =="
"$BIN" compare -t "$OUT/ms_clean" -g "$OUT/pt" -o "$OUT/cmp_clean" -am -cm
echo
echo "== compare: the faulty MindSpore run =="
"$BIN" compare -t "$OUT/ms_ln_eps" -g "$OUT/pt" -o "$OUT/cmp_ln_eps" -am -cm
"$BIN" graph -t "$OUT/ms_ln_eps" -g "$OUT/pt" -o "$OUT/ln_eps.vis.db" -am -cm
