#!/usr/bin/env bash
# Training throughput in practice: target words/s (fairseq-train's wps) of tree2seq and fairseq's transformer with
# the Multi30k recipe's flags (scripts/recipes/multi30k_flags.sh: 3+3 layers, d 256) on the same data-bin (its leaves for
# the transformer), one after the other, each twice; prints the median wps of each run's log lines after the first
# (warm-up).
#
#   [EXTRA="--fp16"] [TREE_EXTRA=...] [PASSES=2] scripts/recipes/train_throughput.sh DATA_BIN [UPDATES=60] [DEVICE=cpu|cuda]
# EXTRA: more fairseq-train flags for both models (e.g. --fp16 on a GPU); TREE_EXTRA: for tree2seq only (e.g.
# "--tree-kernels fused", "--tree-compile --tree-compile-backend cudagraphs"); PASSES: runs of each model.
set -euo pipefail
BIN=$1
UPDATES=${2:-60}
DEVICE=${3:-cpu}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
export FAIRSEQ_TREE_KEEP_LEFTOVERS=1  # both tasks batch every sentence: the same batches for both models
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
source "$REPO/scripts/recipes/multi30k_flags.sh"
DEV_FLAG=""
[ "$DEVICE" = cpu ] && DEV_FLAG="--cpu"
for pass in $(seq "${PASSES:-2}"); do
  for cfg in "tree_translation tree2seq" "translation transformer"; do
    set -- $cfg
    only=""; [ "$2" = tree2seq ] && only=${TREE_EXTRA:-}
    fairseq-train "$BIN" --user-dir "$REPO/fairseq_tree" --task "$1" --arch "$2" -s en -t de "${MULTI30K_FLAGS[@]}" \
      --max-update "$UPDATES" --log-format simple --log-interval 10 --num-workers 0 $DEV_FLAG --no-save \
      --disable-validation --save-dir "$OUT/ckpt" ${EXTRA:-} $only > "$OUT/$2.$pass.log" 2>&1 \
      || { tail -20 "$OUT/$2.$pass.log"; echo "train_throughput: $2 failed" >&2; exit 1; }
    wps=$(grep -o 'wps=[0-9.]*' "$OUT/$2.$pass.log" | tail -n +2 | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    echo "$2 pass $pass: median wps $wps (target words/s)"
  done
done
