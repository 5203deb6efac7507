#!/usr/bin/env bash
# Demo of crash safety: write the ResNet-50 dump through the journal writer, leave the journal as a
# killed writer would, tear its last bytes off, then read it (recovered in memory) and recover it.
set -euo pipefail
bin=${1:-build/bin/numprobe}
src=../shared/fixtures/msprobe/quick_start_resnet50_gpu_mix_statistics/step0/proc2016
out=$(mktemp -d /tmp/numprobe-demo.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$bin" rewrite "$src" -o "$out/step0/rank0" --no-finish
size=$(stat -c %s "$out/step0/rank0/dump.journal")
cut=$((size / 3 + 123))
truncate -s "$cut" "$out/step0/rank0/dump.journal"
echo "journal torn at byte $cut of $size (no dump.json yet)"
"$bin" info "$out" | grep -E "framework|entries|problems|  - "
"$bin" recover "$out"
"$bin" info "$out" | grep -E "framework|entries|problems"
ls "$out/step0/rank0"
