#!/usr/bin/env bash
# The authors' StructFormer code (google-research structformer/, model, loss, training loop and parser unchanged)
# trained on the text of scripts/recipes/induction_wsj.sh, scored by fairseq-tree-score on wsj22 at a list of
# update counts: the reference of issue 49's comparison (RESULTS.md, "Unsupervised tree induction").
#
#   scripts/recipes/reference_structformer.sh [SHARED=../shared] [WORK=work/induction_wsj] [OUT=WORK/reference]
#   env: REF=path to a folder holding structformer/ (a google-research checkout); unset: a sparse clone of
#          https://github.com/google-research/google-research into OUT/google-research (needs the network)
#        CORPUS=ptb|wsj|wsj_all|wsj_brown (its text must exist: run induction_wsj.sh first, or STOP_AFTER=0)
#        UPDATES="1000 2000 5000 10000"  SIZE="--nhid 256 --nlayers 8 --nheads 4" (structformer_small's size;
#        "" gives their defaults, the paper's 512 / 8 / 8)  BATCH=820 (words per batch: what --max-tokens 1024
#        gives our runs)  LR=0.001  SEED=1111  THREADS=1  CUDA=0|1
#
# Their loop trains whole epochs, so each UPDATES entry is rounded up to whole epochs (the real count is in the
# row). Stages chain with their own --resume (model, optimizer and scheduler, its plateau counter included, from
# the previous stage's last epoch; only their best-so-far loss for --save starts afresh, and the stage does not
# keep that file; their main.py reseeds torch with --seed at each start). Python's random, which orders their
# batches and which their code leaves unseeded, is seeded with SEED + 1000 x the epochs before the stage (the
# adapter's `train`), so a rerun gives the same numbers; runs before 2026-11-29 were unseeded draws. Each stage
# is kept (stage_UPDATES.pt: the model after the stage's last epoch, the adapter's --last; their own --save file,
# the stage's lowest validation loss, is dropped) and scored once: rerunning the recipe skips what exists. Stages
# written before 2026-11-29 were their --save file, behind their update count where a stage's last epoch was not
# its best (docs/results-log.md): delete those stages and rerun.
# Data adapter and the list of what differs from running their README: scripts/reference/authors_structformer.py.
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/induction_wsj}
CORPUS=${CORPUS:-ptb}
OUT=${3:-$WORK/reference/$CORPUS}
UPDATES=${UPDATES:-"1000 2000 5000 10000"}
SIZE=${SIZE:---nhid 256 --nlayers 8 --nheads 4}
BATCH=${BATCH:-820}
SEED=${SEED:-1111}
PY=${PYTHON:-python}
case $PY in */*) PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY") ;; esac  # their run starts in REF
export OMP_NUM_THREADS=${THREADS:-1} MKL_NUM_THREADS=${THREADS:-1}
export PYTHONUNBUFFERED=1  # their loop's progress lines reach train.log as they print, not at the end
export PATH=$(dirname "$(command -v "$PY")"):$PATH
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ADAPT="$PY $REPO/scripts/reference/authors_structformer.py"
D=$SHARED/data
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)  # their run starts in REF: a relative WORK would point elsewhere there
if [ -z "${REF:-}" ]; then
  REF=$OUT/google-research
  if [ ! -f "$REF/structformer/structformer.py" ]; then
    git clone --depth 1 --filter=blob:none --sparse https://github.com/google-research/google-research "$REF"
    git -C "$REF" sparse-checkout set structformer
  fi
fi
CUDA_FLAG=(); [ "${CUDA:-0}" = 1 ] && CUDA_FLAG=(--cuda)

info=$($ADAPT prepare --corpus-dir "$WORK/$CORPUS" --ref "$REF" --out "$OUT" --batch-size "$BATCH")
echo "== $info"
per_epoch=${info##*batches_per_epoch=}
export PYTHONPATH=$OUT/shim${PYTHONPATH:+:$PYTHONPATH} NLTK_DATA=$OUT/nltk_data TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
done_epochs=0 prev=
for u in $UPDATES; do
  epochs=$(( (u + per_epoch - 1) / per_epoch ))
  ck=$OUT/stage_$u.pt
  if [ ! -f "$ck" ] && [ "$epochs" -gt "$done_epochs" ]; then
    echo "== their training: to $((epochs * per_epoch)) updates ($epochs epochs of $per_epoch batches)"
    (cd "$REF" && $ADAPT train --ref . --py-seed $(( SEED + 1000 * done_epochs )) --last "$ck.tmp" -- \
      --data "$OUT/data" $SIZE --n_parser_layers 3 --pos_emb \
      --batch_size "$BATCH" --lr "${LR:-0.001}" --seed "$SEED" --epochs $((epochs - done_epochs)) \
      --save "$OUT/best.tmp" ${prev:+--resume "$prev"} "${CUDA_FLAG[@]}") > "$OUT/train_$u.log" 2>&1
    rm -f "$OUT/best.tmp"
    mv "$ck.tmp" "$ck"
  fi
  [ -f "$ck" ] || continue
  done_epochs=$epochs prev=$ck
  if [ ! -f "$OUT/scores_$u.txt" ]; then
    $ADAPT parse --ref "$REF" --checkpoint "$ck" --treebank "$D/wsj22/wsj22.mrg" --dict "$OUT/data/dict.pkl" \
      --out-trees "$OUT/wsj22_$u.trees" --out-deps "$OUT/wsj22_$u.conll" > /dev/null
    fairseq-tree-score --unsupervised --gold "$D/wsj22/wsj22.mrg" --pred "$OUT/wsj22_$u.trees" \
      --gold-dep "$D/wsj22/wsj22.sd.conll" --pred-dep "$OUT/wsj22_$u.conll" > "$OUT/scores_$u.txt.tmp"
    mv "$OUT/scores_$u.txt.tmp" "$OUT/scores_$u.txt"
  fi
  echo "== corpus=$CORPUS updates=$((epochs * per_epoch)) $($PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(" ".join(f"{k}={d[k]:.1f}" for k in ("uf1", "corpus_f1", "uas", "uuas")))' "$OUT/scores_$u.txt")"
done
