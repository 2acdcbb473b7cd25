#!/usr/bin/env bash
# Unsupervised tree induction by masked LM on CPU: constituent attention (Wang et al. 2019), StructFormer
# (Shen et al. 2021) and the plain mlm_transformer of the same size, same data, same budget.
#
#   scripts/recipes/train_induction_ptb.sh [SHARED=../shared] [WORK=work/induction]
#   env: MINUTES=20 (training time per model), SIZE=small (arch suffix: "" paper size, _small, _tiny),
#        MODELS="constituent_transformer structformer mlm_transformer mlm_transformer_sf", EXTRA="..." (more
#        fairseq-train flags). mlm_transformer has constituent_transformer's size, mlm_transformer_sf StructFormer's.
#
# Training text (fairseq_tree.data.induction_text: words only, lower-cased, digits -> N, punctuation dropped):
# CORPUS=all: the words of ptb_sample/train.mrg + wsj22.mrg and the English side of Multi30k train (34,096
# sentences, 486k tokens); CORPUS=ptb: the two treebanks only (5,096 sentences, the WSJ domain the scores are
# on; many more epochs in the same time). Unsupervised parsers are trained on the text of the sentences they
# are scored on, as in the papers (WSJ-all for Wang et al.); ptb_sample/valid is never trained on.
# Vocabulary: 10k types.
# Model selection: wsj22 UF1 at validation (--eval-treebank; the plain MLM: masked-LM loss). Final scores:
# fairseq-tree-induce on ptb_sample/valid (+ .conllu) and wsj22 (+ .sd.conll), baselines beside them.
#
# Writes WORK/text, WORK/data-bin, WORK/ckpt_MODEL/, WORK/induce_MODEL_{ptbvalid,wsj22}/ (trees.txt,
# deps.conllu, scores.json, plots/) and WORK/results.md.
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/induction}
MINUTES=${MINUTES:-20}
SIZE=${SIZE-_small}
CORPUS=${CORPUS:-all}
MODELS=${MODELS:-"constituent_transformer structformer mlm_transformer mlm_transformer_sf"}
EXTRA=${EXTRA:-}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
PY=${PYTHON:-python}
export PATH=$(dirname "$(command -v "$PY")"):$PATH  # its console scripts (fairseq-train, fairseq-tree-*)
D=$SHARED/data
mkdir -p "$WORK/text"
if [ ! -f "$WORK/data-bin/dict.txt" ]; then
  TEXT=""
  [ "$CORPUS" = all ] && TEXT="--text $D/multi30k/train.en"
  fairseq-tree-induction-text --out "$WORK/text/train.txt" \
    --treebank "$D/ptb_sample/train.mrg" "$D/wsj22/wsj22.mrg" $TEXT
  fairseq-tree-induction-text --out "$WORK/text/valid.txt" --treebank "$D/ptb_sample/valid.mrg"
  fairseq-preprocess --only-source --trainpref "$WORK/text/train.txt" --validpref "$WORK/text/valid.txt" \
    --destdir "$WORK/data-bin" --nwordssrc 10000 --workers 2
fi
HOURS=$($PY -c "print($MINUTES / 60)")
[ -f "$WORK/results.md" ] || printf '| model | updates | data | UF1 | corpus F1 | NP | VP | PP | ADJP | SBAR | ADVP | UAS | UUAS | ppl |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n' > "$WORK/results.md"
for M in $MODELS; do
  CK=$WORK/ckpt_$M
  case $M in
    mlm_transformer*) ARCH=$M$SIZE; SELECT="--best-checkpoint-metric loss" ;;
    *) ARCH=$M$SIZE; SELECT="--best-checkpoint-metric uf1 --maximize-best-checkpoint-metric" ;;
  esac
  fairseq-train "$WORK/data-bin" --user-dir fairseq_tree --task tree_induction --arch "$ARCH" \
    --criterion masked_lm --optimizer adam --adam-betas '(0.9,0.98)' --lr 5e-4 --lr-scheduler inverse_sqrt \
    --warmup-updates 400 --clip-norm 1.0 --weight-decay 0.01 --max-tokens 4096 --cpu --seed 1 \
    --eval-treebank "$D/wsj22/wsj22.mrg" --eval-deps "$D/wsj22/wsj22.sd.conll" $SELECT \
    --max-epoch 1000 --stop-time-hours "$HOURS" --save-dir "$CK" --no-epoch-checkpoints \
    --validate-interval-updates 300 --save-interval-updates 300 --keep-interval-updates 1 \
    --log-format simple --log-interval 50 $EXTRA > "$WORK/train_$M.log" 2>&1
  UPDATES=$(grep -o "num_updates [0-9]*" "$WORK/train_$M.log" | tail -1 | cut -d' ' -f2)
  NOSTRUCT=""
  case $M in mlm_transformer*) NOSTRUCT="--no-structure" ;; esac
  for SET in ptbvalid wsj22; do
    if [ $SET = ptbvalid ]; then TB=$D/ptb_sample/valid.mrg; DEPS=$D/ptb_sample/valid.conllu; else TB=$D/wsj22/wsj22.mrg; DEPS=$D/wsj22/wsj22.sd.conll; fi
    fairseq-tree-induce --path "$CK/checkpoint_best.pt" --treebank "$TB" --deps "$DEPS" \
      --out "$WORK/induce_${M}_$SET" --plot 3 $NOSTRUCT > "$WORK/induce_${M}_$SET.txt" 2> "$WORK/induce_${M}_$SET.log"
    $PY - "$WORK/induce_${M}_$SET/scores.json" "$M ($ARCH)" "$UPDATES" "$SET" >> "$WORK/results.md" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
name, updates, data = sys.argv[2:5]
def row(label, u, m, ppl="-"):
    rec = m.get("label_recall", {})
    att = m.get("attachment", {})
    cells = [f"{m['sentence_f1']:.1f}", f"{m['corpus_f1']:.1f}"] + \
        [f"{rec[l]['recall']:.1f}" if l in rec else "-" for l in ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP")] + \
        [f"{att['uas']:.1f}" if att else "-", f"{att['uuas']:.1f}" if att else "-", ppl]
    print(f"| {label} | {u} | {data} | " + " | ".join(cells) + " |")
ppl = f"{r['perplexity']['perplexity']:.1f}" if "perplexity" in r else "-"
if "model" in r:
    row(name, updates, r["model"], ppl)
    for b in ("left", "right", "balanced", "random"):
        if not any(l.startswith(f"| {b} |") and f"| {data} |" in l for l in open(sys.argv[1].rsplit("/", 2)[0] + "/results.md")):
            row(b, "-", r["baselines"][b])
else:
    print(f"| {name} | {updates} | {data} | - | - | - | - | - | - | - | - | - | - | {ppl} |")
PYEOF
  done
  tail -4 "$WORK/results.md"
done
