#!/usr/bin/env bash
# Training throughput in practice: target words/s (fairseq-train's wps) of tree2seq and fairseq's transformer with
# the same sizes (3+3 layers, d 256, the Multi30k recipe's) on the same data-bin (its leaves for the transformer),
# one after the other, each twice; prints the median wps of each run's log lines after the first (warm-up).
#
#   scripts/train_throughput.sh DATA_BIN [UPDATES=60] [DEVICE=cpu|cuda]
set -euo pipefail
BIN=$1
UPDATES=${2:-60}
DEVICE=${3:-cpu}
REPO=$(cd "$(dirname "$0")/.." && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
DEV_FLAG=""
[ "$DEVICE" = cpu ] && DEV_FLAG="--cpu"
for pass in 1 2; do
  for cfg in "tree_translation tree2seq" "translation transformer"; do
    set -- $cfg
    fairseq-train "$BIN" --user-dir "$REPO/fairseq_tree" --task "$1" --arch "$2" -s en -t de --share-all-embeddings \
      --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 --decoder-embed-dim 256 \
      --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4 \
      --decoder-attention-heads 4 --optimizer adam --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 500 \
      --dropout 0.3 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 --max-tokens 4096 \
      --max-update "$UPDATES" --log-format simple --log-interval 10 --num-workers 0 $DEV_FLAG --no-save \
      --disable-validation --save-dir "$OUT/ckpt" > "$OUT/$2.$pass.log" 2>&1
    wps=$(grep -o 'wps=[0-9.]*' "$OUT/$2.$pass.log" | tail -n +2 | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
    echo "$2 pass $pass: median wps $wps (target words/s)"
  done
done
