#!/usr/bin/env bash
# Stanford Sentiment Treebank (SST-5 and SST-2) with the paper's settings (Nguyen et al. 2020, Section 5.2 and
# Appendix 7.4: 2 layers, d 64, 4 heads, lr 7e-4, dropout 0.5, 8,000 warmup updates, 15,000 updates of 2,048
# tokens, every label of the treebank optimised): the tree classifier, its Table 3 ablations, and fairseq's
# Transformer encoder of the same size trained on sentences and on every labelled phrase (Tai et al. 2015).
#
#   scripts/recipes/train_sst.sh [SHARED=../shared] [WORK=work/sst]
#   env: TASKS="sst5 sst2", RUNS="tree transformer transformer_phrases tree_nohier tree_nosubmask tree_nohier_nosubmask",
#        (diagnostics, not in the default RUNS: tree_rootonly = the tree classifier trained on the sentence label
#        only; tree_warmup2k, tree_nosubmask_warmup2k = 2,000 warmup updates instead of the paper's 8,000)
#        SEEDS="1 2 3" (tree and baselines), ABLATION_SEEDS="1", UPDATES=15000, WARMUP=8000, JOBS=2 (runs at once,
#        one thread each), DEVICE=cpu|cuda, EXTRA="..." (more fairseq-train flags)
#        SST=DIR (default SHARED/data/sst: train.txt, dev.txt; the published trees/ folder of
#        trainDevTestTrees_PTB.zip), TEST=1 (also score DIR/test.txt: test.json beside dev.json, as
#        scripts/recipes/papers/nguyen_classification.sh TASK=sst runs it for the paper's Table 2),
#        DRY_RUN=1 (print each run's commands and budget, run and write nothing: scripts/recipes/papers/lib.sh)
#
# Resumable: a run whose WORK/TASK/RUN/sSEED/dev.json exists is skipped; an interrupted run resumes from its
# checkpoint_last.pt. Each finished run is scored on the dev set by fairseq-tree-classify (checkpoint_best.pt,
# selected by dev root accuracy as the paper does not say otherwise) and WORK/results.md is rewritten from every
# dev.json so far (mean ± sd over the seeds done), beside the paper's numbers (its Tables 2 and 3 report test
# accuracy; we report dev: the test split is kept apart).
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/sst}
TASKS=${TASKS:-"sst5 sst2"}
RUNS=${RUNS:-"tree transformer transformer_phrases tree_nohier tree_nosubmask tree_nohier_nosubmask"}
SEEDS=${SEEDS:-"1 2 3"}
ABLATION_SEEDS=${ABLATION_SEEDS:-1}
UPDATES=${UPDATES:-15000}
WARMUP=${WARMUP:-8000}
JOBS=${JOBS:-2}
DEVICE=${DEVICE:-cpu}
EXTRA=${EXTRA:-}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python}
SST=${SST:-$SHARED/data/sst}
TEST=${TEST:-0}
RECIPE="scripts/recipes/train_sst.sh (SST-5 / SST-2, Nguyen et al. 2020 Tables 2 and 3)"
. "$REPO/scripts/recipes/papers/lib.sh"  # x, x_log, x_out, dry: DRY_RUN=1 prints the commands
dry && sized_for "one CPU core per run (DEVICE=cpu) or one NVIDIA H100 80GB (DEVICE=cuda)" \
  "15K updates of 2K tokens per run (tiny models): ~0.1 GPU-hours or ~1.5 CPU-hours a run"
dry || mkdir -p "$WORK"

# 1. data: SST-5 (every sentence, 5 classes) and SST-2 (neutral roots dropped, 0-1 / 3-4), word-level trees,
#    node inputs one symbol (the sentiment labels are targets only)
for T in $TASKS; do
  [ -f "$WORK/data-bin/$T/preprocess.json" ] && continue
  BIN_FLAG=""
  [ "$T" = sst2 ] && BIN_FLAG="--binary"
  dry && printf '\n## step data-%s: SST trees binarized (disk ~10 MB, ~0 GPU-hours)\n' "$T"
  x fairseq-tree-preprocess --task classification --labels nodes $BIN_FLAG -s txt \
    --trainpref "$SST/train" --validpref "$SST/dev" --destdir "$WORK/data-bin/$T" --workers 2
done

# 2. one run: fairseq-train (resumes), then the dev set through fairseq-tree-classify. (set -e does not act
#    inside a function called before ||: every step returns on failure itself.)
run() {
  local T=$1 R=$2 S=$3 ARCH FLAGS="" W=$WARMUP
  local D=$WORK/$T/$R/s$S
  [ -f "$D/dev.json" ] && { [ "$TEST" = 0 ] || [ -f "$D/test.json" ]; } && return 0
  dry && printf '\n## step %s-%s-s%s: train and score (disk ~20 MB, ~0.1 GPU-hours)\n' "$T" "$R" "$S"
  dry || mkdir -p "$D"
  case $R in
    tree) ARCH=tree_classifier_tiny ;;
    tree_nohier) ARCH=tree_classifier_tiny; FLAGS="--no-hierarchical-embeddings" ;;
    tree_nosubmask) ARCH=tree_classifier_tiny; FLAGS="--no-subtree-mask" ;;
    tree_nohier_nosubmask) ARCH=tree_classifier_tiny; FLAGS="--no-hierarchical-embeddings --no-subtree-mask" ;;
    tree_rootonly) ARCH=tree_classifier_tiny; FLAGS="--root-only" ;;
    tree_warmup2k) ARCH=tree_classifier_tiny; W=2000 ;;
    tree_nosubmask_warmup2k) ARCH=tree_classifier_tiny; FLAGS="--no-subtree-mask"; W=2000 ;;
    transformer) ARCH=transformer_classifier_tiny; FLAGS="--root-only" ;;
    transformer_phrases) ARCH=transformer_classifier_tiny; FLAGS="--root-only --phrase-samples" ;;
    *) echo "unknown run $R" >&2; return 1 ;;
  esac
  local DEV_FLAG=""
  [ "$DEVICE" = cpu ] && DEV_FLAG="--cpu"
  # appends: a resumed run keeps its history
  x_log "$D/train.log" fairseq-train "$WORK/data-bin/$T" --user-dir "$REPO/fairseq_tree" --task tree_classification \
    --arch "$ARCH" $FLAGS --optimizer adam --adam-betas '(0.9,0.98)' --lr 7e-4 --lr-scheduler inverse_sqrt \
    --warmup-updates "$W" --warmup-init-lr 1e-7 --dropout 0.5 --max-tokens 2048 --max-update "$UPDATES" --seed "$S" \
    $DEV_FLAG --best-checkpoint-metric accuracy --maximize-best-checkpoint-metric --no-epoch-checkpoints \
    --num-workers 0 --log-format simple --log-interval 100 --save-dir "$D" $EXTRA || return 1
  local split splits=dev; [ "$TEST" = 1 ] && splits="dev test"
  for split in $splits; do  # the checkpoint of the best dev accuracy; its last output line is the JSON of scores
    x_out "$D/$split.out" fairseq-tree-classify --path "$D/checkpoint_best.pt" --input "$SST/$split.txt" \
      $([ "$T" = sst2 ] && echo --binary) --output "$D/$split.pred" --device "$DEVICE" || return 1
    dry || { tail -n 1 "$D/$split.out" > "$D/$split.json.tmp" && mv "$D/$split.json.tmp" "$D/$split.json"; }
  done
  dry || echo "== $T $R seed $S: $(cat "$D/dev.json")"
}

for T in $TASKS; do
  for R in $RUNS; do
    case $R in tree_no*|tree_rootonly|tree_warmup*) SS=$ABLATION_SEEDS ;; *) SS=$SEEDS ;; esac
    for S in $SS; do
      [ "$T" = sst2 ] && case $R in tree_no*|tree_rootonly|tree_warmup*) continue ;; esac   # SST-5 only, as Table 3
      if dry; then run "$T" "$R" "$S"; continue; fi
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
      { run "$T" "$R" "$S" || echo "== $T $R seed $S FAILED: see $WORK/$T/$R/s$S/train.log" >&2; } &
    done
  done
done
wait

# 3. the table
dry && printf '\n## step table: dev accuracy beside the paper (disk ~0 MB, ~0 GPU-hours)\n'
x_out "$WORK/results.md" fairseq-tree-report sst "$WORK"
dry || cat "$WORK/results.md"
