#!/usr/bin/env bash
# make demo: the preprocessing pipeline end to end on Multi30k English-German with stanza trees, then a
# small tree2seq trained for a bounded time (TRAIN_MINUTES, default 10; 0 skips it), translating the test set.
#   scripts/recipes/demo.sh [SHARED_DIR] [WORK_DIR]
# DEMO_QUICK=1 (CI): the same steps with smaller numbers: the first 3,000 / 300 / 300 Multi30k lines, a tiny
# stanza parser trained on 200 PTB trees, 1,000 BPE merges, one minute of training, sacreBLEU on 300 sentences.
# Stanza models are looked for in this order: $STANZA_MODEL_DIR (a dir from scripts/recipes/train_stanza_parser.sh);
# stanza's resources dir ($STANZA_RESOURCES_DIR or ~/stanza_resources); a download if STANZA_DOWNLOAD=1;
# otherwise a small parser is trained once, offline, from the PTB sample + WSJ section 22 and cached in WORK.
set -euo pipefail
SHARED=$(cd "${1:-../shared}" && pwd)
WORK=${2:-work}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python}   # the active environment (make demo puts .venv/bin first on PATH)
export PATH=$(dirname "$(command -v "$PY")"):$PATH PYTHON=$PY  # its console scripts, here and in the recipes run
DATA=${M30K_DIR:-$SHARED/data/multi30k}
WORKERS=${WORKERS:-2}
QUICK=${DEMO_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  echo "== DEMO_QUICK=1: the demo's steps on a slice of the data (numbers are not results)"
  WORK=$WORK/quick && mkdir -p "$WORK/multi30k"
  for l in en de; do   # a slice of each split, parallel lines kept together
    head -n 3000 "$DATA/train.$l" > "$WORK/multi30k/train.$l"
    head -n 300 "$DATA/valid.$l" > "$WORK/multi30k/valid.$l"
    head -n 300 "$DATA/test.$l" > "$WORK/multi30k/test.$l"
  done
  DATA=$WORK/multi30k
  PARSER_SIZE=tiny PARSER_TREES=200 BPE_MERGES=${BPE_MERGES:-1000} TRAIN_MINUTES=${TRAIN_MINUTES:-1}
  PARSER_MINUTES=1
else
  PARSER_SIZE=small PARSER_TREES= BPE_MERGES=${BPE_MERGES:-8000} PARSER_MINUTES=12
fi

# 1. stanza models
STANZA_ARGS=()
RES_DIR=${STANZA_RESOURCES_DIR:-$HOME/stanza_resources}
if [ -n "${STANZA_MODEL_DIR:-}" ]; then
  echo "== stanza: models from STANZA_MODEL_DIR=$STANZA_MODEL_DIR"
  STANZA_ARGS=(--stanza-model-dir "$STANZA_MODEL_DIR")
elif "$PY" -c "from fairseq_tree.parsers.stanza_parser import resolve_stanza_models as r; r()" 2>/dev/null; then
  echo "== stanza: models found in stanza's resources directory $RES_DIR"
elif [ "${STANZA_DOWNLOAD:-0}" = 1 ]; then
  echo "== stanza: downloading English models into $RES_DIR (STANZA_DOWNLOAD=1)"
  STANZA_ARGS=(--stanza-download)
else
  MODELS=$WORK/stanza_en_ptb
  if [ ! -f "$MODELS/model_info.json" ]; then
    echo "== stanza: no English models here and no download asked for (STANZA_DOWNLOAD=1):"
    echo "   training a $PARSER_SIZE parser offline from $SHARED/data/ptb_sample + wsj22 into $MODELS" \
         "(about $PARSER_MINUTES minutes, once)"
    TB=$WORK/treebank && mkdir -p "$TB"
    if [ -n "$PARSER_TREES" ]; then   # quick: the first trees of the PTB sample, 30 dev trees
      head -n "$PARSER_TREES" "$SHARED/data/ptb_sample/train.mrg" > "$TB/train.mrg"
      head -n 30 "$SHARED/data/ptb_sample/valid.mrg" > "$TB/valid.mrg"
    else
      ln -sf "$SHARED/data/ptb_sample/train.mrg" "$TB/train.mrg"
      ln -sf "$SHARED/data/wsj22/wsj22.mrg" "$TB/train_wsj22.mrg"   # training data too; valid.mrg is the dev set
      ln -sf "$SHARED/data/ptb_sample/valid.mrg" "$TB/valid.mrg"
    fi
    bash "$REPO/scripts/recipes/train_stanza_parser.sh" "$TB" "$MODELS" --size "$PARSER_SIZE"
  else
    echo "== stanza: reusing the parser trained earlier in $MODELS"
  fi
  STANZA_ARGS=(--stanza-model-dir "$MODELS")
fi

# 2. the pipeline
DEST=$WORK/data-bin/multi30k.en-de
echo "== fairseq-tree-preprocess: Multi30k en-de ($DATA), $WORKERS workers -> $DEST"
time fairseq-tree-preprocess -s en -t de \
  --trainpref "$DATA/train" --validpref "$DATA/valid" --testpref "$DATA/test" \
  --parser stanza "${STANZA_ARGS[@]}" --bpe-merges "$BPE_MERGES" --joined-dictionary \
  --workers "$WORKERS" --on-error skip --destdir "$DEST"

# 3. what it wrote
"$PY" - "$DEST" <<'PYEOF'
import json, sys
dest = sys.argv[1]
r = json.load(open(f"{dest}/preprocess.json"))
print("\n== report (%s/preprocess.json)" % dest)
for split, s in r["splits"].items():
    print(f"{split:5s}: {s['lines']} lines -> {s['sentences']} sentences, {s['skipped']} skipped "
          f"{s['skipped_by_reason'] or ''}; {s['source_tokens']} source tokens, {s['nodes']} nodes, "
          f"{s['target_tokens']} target tokens; unk src/labels/tgt {s['source_unk']}/{s['label_unk']}/{s['target_unk']}")
for stage, t in r["throughput"].items():
    if stage != "wall_seconds":
        print(f"{stage:9s} {t['sentences_per_s']:>10} sentences/s")
print("dictionaries:", {k: v["size"] for k, v in r["dictionaries"].items()})
print("\n== first test tree (%s/test.en.trees):" % dest)
print(open(f"{dest}/test.en.trees").readline().strip())
PYEOF

# 4. a small tree2seq for a bounded time, then the test set with beam 5 and sacrebleu
TRAIN_MINUTES=${TRAIN_MINUTES:-10}
if [ "$TRAIN_MINUTES" != 0 ]; then
  BINDIR=$(dirname "$(command -v "$PY")")
  CKPT=$WORK/ckpt/demo_tree2seq
  HOURS=$("$PY" -c "print($TRAIN_MINUTES / 60)")
  LOG_INTERVAL=$([ "$QUICK" = 1 ] && echo 5 || echo 20)
  rm -rf "$CKPT" && mkdir -p "$CKPT"   # a demo run starts from scratch (--stop-time-hours counts resumed time)
  echo "== fairseq-train: tree2seq (3+3 layers, d 256) for $TRAIN_MINUTES minutes on $DEST"
  "$BINDIR/fairseq-train" "$DEST" --user-dir "$REPO/fairseq_tree" --task tree_translation --arch tree2seq \
    --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 --decoder-embed-dim 256 \
    --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4 --decoder-attention-heads 4 \
    --share-all-embeddings --optimizer adam --adam-betas '(0.9,0.98)' --lr 1e-3 --lr-scheduler inverse_sqrt \
    --warmup-updates 200 --dropout 0.3 --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --max-tokens 4096 --stop-time-hours "$HOURS" --max-update 100000 --disable-validation --no-epoch-checkpoints \
    --log-format simple --log-interval "$LOG_INTERVAL" --num-workers 0 --cpu --save-dir "$CKPT" 2>&1 \
    | tee "$CKPT.train.log" | grep -E "train_inner|done training"
  echo "== fairseq-generate: test set, beam 5, sacrebleu on detokenized output"
  "$BINDIR/fairseq-generate" "$DEST" --user-dir "$REPO/fairseq_tree" --task tree_translation \
    --path "$CKPT/checkpoint_last.pt" --gen-subset test --beam 5 --batch-size 128 --remove-bpe \
    --tokenizer moses -s en -t de --scoring sacrebleu --cpu > "$CKPT/test.gen" 2>&1 \
    || { tail -20 "$CKPT/test.gen"; echo "demo: fairseq-generate failed (log: $CKPT/test.gen)" >&2; exit 1; }
  N_HYP=$(grep -c "^H-" "$CKPT/test.gen"); N_TEST=$(grep -c "" "$DATA/test.en")
  [ "$N_HYP" = "$N_TEST" ] || { echo "demo: $N_HYP translations for $N_TEST test sentences" >&2; exit 1; }
  grep -E "^(S|D)-0\b" "$CKPT/test.gen" | head -2
  grep "BLEU" "$CKPT/test.gen" | tail -1 \
    || { echo "demo: no BLEU line in $CKPT/test.gen" >&2; exit 1; }
  echo "(a CPU budget of $TRAIN_MINUTES minutes is far from convergence: see RESULTS.md)"
fi
