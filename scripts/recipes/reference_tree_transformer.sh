#!/usr/bin/env bash
# The authors' Tree Transformer code (yaushian/Tree-Transformer at 04d19d3; model, loss, optimiser, training loop
# and parser unchanged) trained on the text and 10k vocabulary of scripts/recipes/induction_wsj.sh, scored by
# fairseq-tree-score on wsj22 at a list of update counts: the reference beside constituent_transformer (issue 49).
#
#   scripts/recipes/reference_tree_transformer.sh [SHARED=../shared] [WORK=work/induction_wsj]
#                                                 [OUT=WORK/reference_tt/CORPUS]
#   env: REF=path to their checkout (solver.py, parse.py ...); unset: a clone of
#          https://github.com/yaushian/Tree-Transformer at 04d19d3 into OUT/Tree-Transformer (needs the network)
#        CORPUS=ptb|wsj|wsj_all|wsj_brown (its text must exist: run induction_wsj.sh first)
#        UPDATES="1000 2000 5000 10000"
#        SIZE="--layers 6 --d-model 256 --heads 4 --d-ff 1024" (constituent_transformer_small's size; "" gives
#          their Solver's N=10, d 512, 8 heads, FFN 2048)
#        SEED=1  THREADS=1  CUDA=0|1
#
# Their batches (64 sentences, masked as their data_utils does) and optimiser (Adam lr 1e-4, (0.9, 0.98), eps 1e-9,
# clip 1.5) as in their code. Training keeps the model after each UPDATES count (OUT/stage_U.pt); each
# stage is parsed by their parse code (threshold 0.8, from the top layer) and scored once (OUT/scores_U.txt); a row
# per stage goes to OUT/rows.txt. Each stage is trained on from the one before it and scored before the next one
# trains (weights, their Adam, random states, the batcher's place: the same stages as one uninterrupted run on CPU),
# so a run stopped midway keeps its scored stages; rerunning skips what exists, and a long run goes on in slices:
# UPDATES="1000", later UPDATES="1000 2000 5000". train.log gathers the slices' logs.
# Data adapter and the list of what differs from running their README: scripts/reference/authors_tree_transformer.py.
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/induction_wsj}
CORPUS=${CORPUS:-ptb}
OUT=${3:-$WORK/reference_tt/$CORPUS}
UPDATES=${UPDATES:-"1000 2000 5000 10000"}
SIZE=${SIZE---layers 6 --d-model 256 --heads 4 --d-ff 1024}
PY=${PYTHON:-python}
export OMP_NUM_THREADS=${THREADS:-1} MKL_NUM_THREADS=${THREADS:-1}
export PYTHONUNBUFFERED=1  # their loop's progress lines reach train.log as they print, not at the end
export PATH=$(dirname "$(command -v "$PY")"):$PATH
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ADAPT="$PY $REPO/scripts/reference/authors_tree_transformer.py"
D=$SHARED/data
mkdir -p "$OUT"
if [ -z "${REF:-}" ]; then
  REF=$OUT/Tree-Transformer
  if [ ! -f "$REF/solver.py" ]; then
    git clone https://github.com/yaushian/Tree-Transformer "$REF"
    git -C "$REF" checkout 04d19d3
  fi
fi
CUDA_FLAG=(); [ "${CUDA:-0}" = 1 ] && CUDA_FLAG=(--cuda)

: > "$OUT/rows.txt.tmp"
for u in $UPDATES; do
  if [ ! -f "$OUT/stage_$u.pt" ]; then  # trains on from the largest stage below u: a stage is scored as it lands
    # shellcheck disable=SC2086  # SIZE is a list of flags
    $ADAPT train --corpus-dir "$WORK/$CORPUS" --ref "$REF" --out "$OUT" --updates "$u" $SIZE \
      --seed "${SEED:-1}" "${CUDA_FLAG[@]}" >> "$OUT/train.log" 2>&1 || { tail -20 "$OUT/train.log" >&2; exit 1; }
    echo "== $(tail -1 "$OUT/train.log")"
  fi
  if [ ! -f "$OUT/scores_$u.txt" ]; then
    $ADAPT parse --ref "$REF" --checkpoint "$OUT/stage_$u.pt" --dict "$WORK/$CORPUS/data-bin/dict.txt" \
      --treebank "$D/wsj22/wsj22.mrg" --out-trees "$OUT/wsj22_$u.trees" "${CUDA_FLAG[@]}" > /dev/null
    fairseq-tree-score --unsupervised --gold "$D/wsj22/wsj22.mrg" --pred "$OUT/wsj22_$u.trees" \
      > "$OUT/scores_$u.txt.tmp"
    mv "$OUT/scores_$u.txt.tmp" "$OUT/scores_$u.txt"
  fi
  row="corpus=$CORPUS updates=$u $($PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(" ".join(f"{k}={d[k]:.1f}" for k in ("uf1", "corpus_f1")))' "$OUT/scores_$u.txt")"
  echo "$row" | tee -a "$OUT/rows.txt.tmp"
done
mv "$OUT/rows.txt.tmp" "$OUT/rows.txt"
