#!/usr/bin/env bash
# Translation at convergence on a published baseline (issue 30): Wu et al. 2021's text-only transformer_tiny on
# Multi30k (github LividWo/Revisit-MMT, README-baseline.md: BLEU4 41.02 on en-de test 2016), their data and BPE,
# their flags (the defaults of their fairseq 0.9 fork written out: Adam (0.9, 0.98), inverse-sqrt from 1e-7,
# clip-norm 25, label smoothing 0.1), --update-freq 2 for their second GPU, the last 10 epoch checkpoints averaged,
# beam 5; then tree2seq of identical size on the same data and schedule. Resumable: rerun the same command; a run
# goes on from its checkpoint_last.pt, finished runs are skipped.
#
#   scripts/recipes/multi30k_anchor.sh WORK_DIR
#   env: RUNS="transformer"  rows to train, in this order (transformer, tree2seq_lal, tree2seq_trivial)
#        SEEDS="1"  TGT=de  UPDATES=8000  PATIENCE=10  DEVICE=cpu|cuda  THREADS=1
#        REVISIT=../shared/data/multi30k_revisit (their files; read from the public repository when absent is left
#        to the user: git clone https://github.com/LividWo/Revisit-MMT, data/multi30k-en-TGT/)
#        M30K=../shared/data/multi30k (the raw cased text: sacreBLEU's references, lowercased)
# Writes WORK/data-bin/en-TGT, WORK/ckpt/TGT/RUN_sSEED/{train.log,flags.txt,checkpoint_avg10.pt,{valid,test}.gen,
# test.sacrebleu}, and WORK/results.jsonl (one line per finished run: both metrics, updates, epochs, minutes).
set -euo pipefail
WORK=${1:?WORK_DIR}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}; [ -x "$PY" ] || PY=python3
export PATH=$(dirname "$(command -v "$PY")"):$PATH
THREADS=${THREADS:-1}
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS
SHARED=${SHARED:-$REPO/../shared}
REVISIT=${REVISIT:-$SHARED/data/multi30k_revisit}
M30K=${M30K:-$SHARED/data/multi30k}
RUNS=${RUNS:-transformer}
SEEDS=${SEEDS:-1}
TGT=${TGT:-de}
UPDATES=${UPDATES:-8000}
PATIENCE=${PATIENCE:-10}
DEVICE=${DEVICE:-cpu}
DEV_FLAGS=(--cpu); [ "$DEVICE" = cuda ] && DEV_FLAGS=()
DATA=$WORK/data-bin/en-$TGT
# the plugin: its arch for the tree2seq rows, and the checkpoint allowlist that lets fairseq 0.12 load its own
# checkpoints under torch >= 2.6 (a resume, the average, fairseq-generate); the transformer rows use no more of it
USER_DIR=${USER_DIR-$REPO/fairseq_tree}
UD=(${USER_DIR:+--user-dir "$USER_DIR"})

# 1. their BPE'd text, binarized as their README does (joined dictionary)
if [ ! -f "$DATA/.done" ]; then
  fairseq-preprocess --source-lang en --target-lang "$TGT" --trainpref "$REVISIT/en-$TGT/train" \
    --validpref "$REVISIT/en-$TGT/valid" --testpref "$REVISIT/en-$TGT/test.2016" --destdir "$DATA" \
    --joined-dictionary --workers "$THREADS"
  touch "$DATA/.done"
fi

# 2. train: the model flags of their transformer_tiny and the defaults of their fork, written out
TINY=(--share-all-embeddings --encoder-embed-dim 128 --decoder-embed-dim 128 --encoder-ffn-embed-dim 256
  --decoder-ffn-embed-dim 256 --encoder-layers 4 --decoder-layers 4 --encoder-attention-heads 4
  --decoder-attention-heads 4 --dropout 0.3)
OPTIM=(--optimizer adam --adam-betas '(0.9,0.98)' --clip-norm 25 --lr 0.005 --lr-scheduler inverse_sqrt
  --warmup-updates 2000 --warmup-init-lr 1e-07 --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 4096 --update-freq 2)
SCHEDULE=(--max-update "$UPDATES" --patience "$PATIENCE" --keep-last-epochs 10 --log-format simple --log-interval 10
  --num-workers 0)
flags() {  # run seed -> the flags that make the run what it is (its flags.txt)
  case $1 in
    transformer) echo "$DATA --task translation --arch transformer ${TINY[*]} ${OPTIM[*]} --seed $2 -s en -t $TGT ${DEV_FLAGS[*]}" ;;
    *) echo "unknown run $1 (transformer)" >&2; return 2 ;;
  esac
}
run() {  # run seed
  local dir=$WORK/ckpt/$TGT/$1_s$2
  [ -f "$dir/.done" ] && return 0
  mkdir -p "$dir"
  local f; f=$(flags "$1" "$2")
  if [ -f "$dir/flags.txt" ] && [ "$(cat "$dir/flags.txt")" != "$f" ]; then
    printf '%s\n' "$dir: trained with other flags; use another WORK_DIR" "  was: $(cat "$dir/flags.txt")" "  now: $f" >&2
    return 2
  fi
  echo "$f" > "$dir/flags.txt"
  echo "== $(date -u +%FT%TZ) start/resume" >> "$dir/train.log"
  # shellcheck disable=SC2046  # the recorded flags, word-split (none holds a space)
  fairseq-train "${UD[@]}" "${SCHEDULE[@]}" --save-dir "$dir" $f >> "$dir/train.log" 2>&1
  touch "$dir/.done"
}
# 3. evaluate as they do: the last 10 epoch checkpoints averaged, beam 5, fairseq's BLEU on their tokenized
#    lowercased text (--remove-bpe); and sacreBLEU on the Moses-detokenized output against the raw references
evaluate() {  # run seed
  local dir=$WORK/ckpt/$TGT/$1_s$2
  [ -f "$dir/result.json" ] && return 0
  [ -f "$dir/checkpoint_avg10.pt" ] || fairseq-tree-average --inputs "$dir" --num-epoch-checkpoints 10 \
    --output "$dir/checkpoint_avg10.pt"
  for split in valid test; do
    fairseq-generate "$DATA" "${UD[@]}" --task translation -s en -t "$TGT" --path "$dir/checkpoint_avg10.pt" --gen-subset "$split" \
      --beam 5 --batch-size 128 --remove-bpe "${DEV_FLAGS[@]}" > "$dir/$split.gen.tmp" 2>&1
    mv "$dir/$split.gen.tmp" "$dir/$split.gen"
  done
  fairseq-tree-report translation "$dir" --reference "$M30K/test.$TGT" --lang "$TGT" --lowercase \
    $([ "$1" != transformer ] && [ -f "$WORK/ckpt/$TGT/transformer_s$2/test.gen" ] \
      && echo --baseline "$WORK/ckpt/$TGT/transformer_s$2") > "$dir/result.json.tmp"
  mv "$dir/result.json.tmp" "$dir/result.json"
}
for seed in $SEEDS; do
  for r in $RUNS; do
    run "$r" "$seed"
    evaluate "$r" "$seed"
  done
done
cat "$WORK"/ckpt/"$TGT"/*/result.json 2>/dev/null > "$WORK/results.jsonl" || true
