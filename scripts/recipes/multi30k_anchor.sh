#!/usr/bin/env bash
# Translation at convergence on a published baseline (issue 30): Wu et al. 2021's text-only transformer_tiny on
# Multi30k (github LividWo/Revisit-MMT, README-baseline.md: BLEU4 41.02 on en-de test 2016), their data and BPE,
# their flags (the defaults of their fairseq 0.9 fork written out: Adam (0.9, 0.98), inverse-sqrt from 1e-7,
# clip-norm 25, label smoothing 0.1), --update-freq 2 for their second GPU, the last 10 epoch checkpoints averaged,
# beam 5; then tree2seq of identical size on the same data and schedule. Resumable: rerun the same command; a run
# goes on from its checkpoint_last.pt and stops where one uninterrupted run stops (--patience counted over all its
# segments, from train.log), finished runs are skipped.
#
#   scripts/recipes/multi30k_anchor.sh WORK_DIR
#   env: RUNS="transformer"  rows to train, in this order: transformer (fairseq's translation task, stock),
#                            tree2seq_trivial (right-branching trees over the words), tree2seq_lal (LAL_MODEL=CKPT:
#                            a lal_parser trained --no-pos-tags on lowercased treebank words, as the text is)
#        SEEDS="1"  TGT=de  UPDATES=8000  PATIENCE=10  AVERAGE=10  DEVICE=cpu|cuda  THREADS=1
#        WORKERS=0 (fairseq-train --num-workers: batches loaded beside the GPU's step; the same batches either way)
#        POLL=20 seconds between looks at train.log for the patience stop
#        GEN_EXTRA="..." more fairseq-generate flags (tests: --max-len-a 0 --max-len-b 5)
#        ARCHIVE=DIR: each finished run's record also in DIR/ckpt/TGT/RUN_sSEED (result.json, the test hypotheses and
#        BLEU line of test.gen, the validations and starts of train.log: some kB, kept in git where a work directory
#        does not outlive its machine); `fairseq-tree-report anchor DIR` reads it as it reads WORK
#        PREPARE_ONLY=1: build the data-bins of RUNS and stop (no training): the tree rows' data made where the parser
#        runs, their training later or elsewhere
#        REVISIT=../shared/data/multi30k_revisit (their files; read from the public repository when absent is left
#        to the user: git clone https://github.com/LividWo/Revisit-MMT, data/multi30k-en-TGT/)
#        M30K=../shared/data/multi30k (the raw cased text: sacreBLEU's references, lowercased)
#  On a CPU, run it under jemalloc (LD_PRELOAD, MALLOC_CONF: docs/install.md, Memory allocator): 1.35x the updates/s of glibc's malloc
# Writes WORK/data-bin/en-TGT, WORK/ckpt/TGT/RUN_sSEED/{train.log,flags.txt,checkpoint_avg10.pt,{valid,test}.gen,
# test.sacrebleu}, and WORK/results.jsonl (one line per finished run: both metrics, updates, epochs, minutes).
set -euo pipefail
WORK=${1:?WORK_DIR}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python}  # the active environment
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
POLL=${POLL:-20}  # seconds between looks at train.log for the patience stop
AVERAGE=${AVERAGE:-10}  # the last N epoch checkpoints averaged (theirs: 10)
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

# 1b. the tree rows' data: their tokenized lowercased English words (*.bert.en) as the source text, their German
#    with BPE undone as the target, their BPE codes and joint dictionary; trees given (trivial) or parsed (lal).
#    The check below asserts that the binarized target is fairseq-preprocess's, token for token, and the tree
#    leaves are its source tokens (no EOS on a tree source): the same words, the same BPE, the same ids.
TEXT=$WORK/text/en-$TGT
if [ ! -f "$TEXT/.done" ]; then
  mkdir -p "$TEXT"
  for s in train valid test; do
    src=$s; [ $s = test ] && src=test.2016
    cp "$REVISIT/en-$TGT/$src.bert.en" "$TEXT/$s.en"
    sed -r 's/(@@ )|(@@ ?$)//g' "$REVISIT/en-$TGT/$src.$TGT" > "$TEXT/$s.$TGT"
  done
  touch "$TEXT/.done"
fi
tree_databin() {  # src (trivial|lal) -> WORK/data-bin/src.en-TGT
  local out=$WORK/data-bin/$1.en-$TGT
  [ -f "$out/.done" ] && return 0
  local parse=()
  case $1 in
    trivial)
      local T=$WORK/trees/trivial.en-$TGT && mkdir -p "$T"
      for s in train valid test; do  # flat (S (X w) ...) trees, then right-branching X nodes over them
        awk '{ out = "(S"; for (i = 1; i <= NF; i++) { w = $i; gsub(/\(/, "-LRB-", w); gsub(/\)/, "-RRB-", w)
               out = out " (X " w ")" } print out ")" }' "$TEXT/$s.en" > "$T/$s.flat"
        fairseq-tree-trivial-trees "$T/$s.flat" "$T/$s.en.trees" --shape right
      done
      parse=(--parser given --trees-dir "$T") ;;
    lal) parse=(--parser lal --parser-model "${LAL_MODEL:?RUNS has tree2seq_lal: LAL_MODEL=CKPT}") ;;
  esac
  fairseq-tree-preprocess -s en -t "$TGT" --trainpref "$TEXT/train" --validpref "$TEXT/valid" --testpref "$TEXT/test" \
    --tokenize none "${parse[@]}" --bpe-codes "$REVISIT/en-$TGT/code" --srcdict "$DATA/dict.en.txt" \
    --tgtdict "$DATA/dict.$TGT.txt" --workers "$THREADS" --on-error fail --destdir "$out"
  "$PY" - "$DATA" "$out" "$TGT" <<'PYEOF'
import sys
from fairseq.data import data_utils
ref, tree, tgt = sys.argv[1:]
for split in ("train", "valid", "test"):
    load = lambda d, side: data_utils.load_indexed_dataset(f"{d}/{split}.en-{tgt}.{side}", None, "mmap")
    a, b = load(ref, tgt), load(tree, tgt)
    sa, sb = load(ref, "en"), load(tree, "en")
    assert len(a) == len(b) == len(sa) == len(sb), (split, len(a), len(b))
    bad = [i for i in range(len(a)) if a[i].tolist() != b[i].tolist() or sa[i].tolist()[:-1] != sb[i].tolist()]
    assert not bad, f"{split}: {len(bad)} sentences differ from fairseq-preprocess's, the first: {bad[:5]}"
    print(f"{tree} {split}: {len(a)} sentences, the same target and source tokens as {ref}")
PYEOF
  touch "$out/.done"
}

# 2. train: the model flags of their transformer_tiny and the defaults of their fork, written out
TINY=(--share-all-embeddings --encoder-embed-dim 128 --decoder-embed-dim 128 --encoder-ffn-embed-dim 256
  --decoder-ffn-embed-dim 256 --encoder-layers 4 --decoder-layers 4 --encoder-attention-heads 4
  --decoder-attention-heads 4 --dropout 0.3)
OPTIM=(--optimizer adam --adam-betas '(0.9,0.98)' --clip-norm 25 --lr 0.005 --lr-scheduler inverse_sqrt
  --warmup-updates 2000 --warmup-init-lr 1e-07 --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 4096 --update-freq 2)
SCHEDULE=(--max-update "$UPDATES" --patience "$PATIENCE" --keep-last-epochs "$AVERAGE" --log-format simple --log-interval 10
  --num-workers "${WORKERS:-0}")
flags() {  # run seed -> the flags that make the run what it is (its flags.txt; the device is not one of them)
  case $1 in
    transformer) echo "$DATA --task translation --arch transformer ${TINY[*]} ${OPTIM[*]} --seed $2 -s en -t $TGT" ;;
    tree2seq_trivial|tree2seq_lal) echo "$WORK/data-bin/${1#tree2seq_}.en-$TGT --task tree_translation" \
      "--arch tree2seq_multi30k_tiny --share-all-embeddings --dropout 0.3 ${OPTIM[*]} --tree-batch-by leaves" \
      "--seed $2 -s en -t $TGT" ;;
    *) echo "unknown run $1 (transformer, tree2seq_trivial, tree2seq_lal)" >&2; return 2 ;;
  esac
}
run() {  # run seed
  local dir=$WORK/ckpt/$TGT/$1_s$2
  [ -f "$dir/.done" ] && return 0
  mkdir -p "$dir"
  local f; f=$(flags "$1" "$2")
  # a run goes on from its checkpoint on another device, or with its work directory moved (a GPU's copy of it)
  same() { sed -e 's/ --cpu$//' -e "s#[^ ]*/data-bin/#WORK/data-bin/#"; }
  if [ -f "$dir/flags.txt" ] && [ "$(same < "$dir/flags.txt")" != "$(echo "$f" | same)" ]; then
    printf '%s\n' "$dir: trained with other flags; use another WORK_DIR" "  was: $(cat "$dir/flags.txt")" "  now: $f" >&2
    return 2
  fi
  echo "$f" > "$dir/flags.txt"
  # fairseq counts --patience in a function's attributes, not in the checkpoint: a resumed run counts afresh and
  # would train on (its --keep-last-epochs deleting the epochs to average). The run stops where one
  # uninterrupted run stops, read from its log: not started again, or ended once that epoch is saved.
  if [ -n "$(stop_of "$dir")" ]; then touch "$dir/.done"; return 0; fi
  local ud=("${UD[@]}"); [ "$1" = transformer ] || ud=(--user-dir "$REPO/fairseq_tree")  # tree rows need the plugin
  echo "== $(date -u +%FT%TZ) start/resume on $DEVICE" >> "$dir/train.log"
  # shellcheck disable=SC2046  # the recorded flags, word-split (none holds a space)
  fairseq-train "${ud[@]}" "${SCHEDULE[@]}" --save-dir "$dir" $f "${DEV_FLAGS[@]}" >> "$dir/train.log" 2>&1 &
  TRAIN_PID=$!
  local pid=$TRAIN_PID saves=0 n
  while kill -0 "$pid" 2>/dev/null; do
    sleep "$POLL"
    n=$(grep -c "Saved checkpoint" "$dir/train.log" || true)
    if [ "$n" != "$saves" ]; then  # a new validation saved: has the uninterrupted run stopped?
      saves=$n
      if [ -n "$(stop_of "$dir")" ]; then kill "$pid" 2>/dev/null || true; fi
    fi
  done
  if ! wait "$pid" && [ -z "$(stop_of "$dir")" ]; then
    echo "$dir: fairseq-train failed (see its train.log)" >&2
    return 1
  fi
  TRAIN_PID=
  touch "$dir/.done"
}
# a training runs in the background (watched for the stop): it ends with this script, e.g. on ^C
TRAIN_PID=
trap '[ -z "$TRAIN_PID" ] || kill "$TRAIN_PID" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
stop_of() {  # run dir -> "EPOCH UPDATES" where one uninterrupted run with --patience stops; nothing before that
  [ ! -f "$1/train.log" ] || fairseq-tree-report patience "$1/train.log" --patience "$PATIENCE"
}
# 3. evaluate as they do: the last 10 epoch checkpoints averaged, beam 5, fairseq's BLEU on their tokenized
#    lowercased text (--remove-bpe); and sacreBLEU on the Moses-detokenized output against the raw references
evaluate() {  # run seed
  local dir=$WORK/ckpt/$TGT/$1_s$2
  [ -f "$dir/result.json" ] && return 0
  local stop; stop=$(stop_of "$dir" | cut -d' ' -f1)  # the last epochs up to the stop, as uninterrupted
  [ -f "$dir/checkpoint_avg10.pt" ] || fairseq-tree-average --inputs "$dir" --num-epoch-checkpoints "$AVERAGE" \
    ${stop:+--checkpoint-upper-bound "$stop"} --output "$dir/checkpoint_avg10.pt"
  for split in valid test; do
    local data=$DATA task=translation
    [ "$1" = transformer ] || { data=$WORK/data-bin/${1#tree2seq_}.en-$TGT; task=tree_translation; }
    fairseq-generate "$data" --user-dir "$REPO/fairseq_tree" --task $task -s en -t "$TGT" \
      --path "$dir/checkpoint_avg10.pt" --gen-subset "$split" \
      --beam 5 --batch-size 128 --remove-bpe "${DEV_FLAGS[@]}" ${GEN_EXTRA:-} > "$dir/$split.gen.tmp" 2>&1
    mv "$dir/$split.gen.tmp" "$dir/$split.gen"
  done
  fairseq-tree-report translation "$dir" --reference "$M30K/test.$TGT" --lang "$TGT" --lowercase --patience "$PATIENCE" \
    $([ "$1" != transformer ] && [ -f "$WORK/ckpt/$TGT/transformer_s$2/test.gen" ] \
      && echo --baseline "$WORK/ckpt/$TGT/transformer_s$2") > "$dir/result.json.tmp"
  mv "$dir/result.json.tmp" "$dir/result.json"
}
archive() {  # run seed: what fairseq-tree-report anchor reads of a finished run, into ARCHIVE
  local dir=$WORK/ckpt/$TGT/$1_s$2 out=$ARCHIVE/ckpt/$TGT/$1_s$2
  mkdir -p "$out" && cp "$dir/result.json" "$out/"
  grep -E '^H-|BLEU4? = ' "$dir/test.gen" > "$out/test.gen"
  grep -E "start/resume|'cpu': (True|False)|valid on 'valid' subset|Saved checkpoint|done training" "$dir/train.log" \
    > "$out/train.log"
}
for seed in $SEEDS; do
  for r in $RUNS; do
    [ "$r" = transformer ] || tree_databin "${r#tree2seq_}"
    [ "${PREPARE_ONLY:-0}" = 1 ] && continue
    run "$r" "$seed"
    evaluate "$r" "$seed"
    [ -z "${ARCHIVE:-}" ] || archive "$r" "$seed"
  done
done
cat "$WORK"/ckpt/"$TGT"/*/result.json 2>/dev/null > "$WORK/results.jsonl" || true
