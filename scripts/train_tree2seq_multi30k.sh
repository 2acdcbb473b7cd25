#!/usr/bin/env bash
# tree2seq vs fairseq's transformer (same size, same updates) on Multi30k en->de, plus tree2seq on trivial
# (right-branching) trees, over several seeds; BLEU with sacrebleu on detokenized test output.
#
#   scripts/train_tree2seq_multi30k.sh DATA_BIN WORK_DIR
#     DATA_BIN: fairseq-tree-preprocess output with stanza trees (make demo writes work/data-bin/multi30k.en-de)
#   env: SEEDS="1 2 3"  UPDATES=3000  M30K=../shared/data/multi30k  DEVICE=cpu|cuda  PARALLEL=1 (runs at once)
#        EXTRA="..." more fairseq-train flags
set -euo pipefail
BIN=$(cd "${1:?DATA_BIN}" && pwd)
WORK=${2:?WORK_DIR}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
M30K=${M30K:-$REPO/../shared/data/multi30k}
SEEDS=${SEEDS:-1 2 3}
UPDATES=${UPDATES:-3000}
DEVICE=${DEVICE:-cpu}
PARALLEL=${PARALLEL:-1}
PY=${PYTHON:-$REPO/.venv/bin/python}; [ -x "$PY" ] || PY=python3
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
DEV_FLAGS=(--cpu); [ "$DEVICE" = cuda ] && DEV_FLAGS=(--fp16)

# 1. the control: the same words, POS tags, BPE subtrees and dictionaries, right-branching constituents
TRIV=$WORK/data-bin-trivial
if [ ! -f "$TRIV/preprocess.json" ]; then
  mkdir -p "$WORK/trivial_trees"
  for s in train valid test; do
    "$PY" "$REPO/scripts/make_trivial_trees.py" "$BIN/$s.en.trees" "$WORK/trivial_trees/$s.en.trees" --shape right
  done
  "$PY" -m fairseq_tree.preprocess.cli -s en -t de --trainpref "$M30K/train" --validpref "$M30K/valid" --testpref "$M30K/test" \
    --parser given --trees-dir "$WORK/trivial_trees" --bpe-codes "$BIN/bpe.codes" --joined-dictionary \
    --srcdict "$BIN/dict.en.txt" --on-error skip --workers 2 --destdir "$TRIV"
fi

# 2. train: identical sizes and hyper-parameters (3+3 layers, d 256, ffn 1024, 4 heads, the fairseq_notes
#    CPU baseline), identical number of updates
COMMON=(--share-all-embeddings --encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 --decoder-embed-dim 256
  --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4 --decoder-attention-heads 4
  --optimizer adam --adam-betas '(0.9,0.98)' --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 500
  --dropout 0.3 --weight-decay 0.0001 --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens 4096 --max-update "$UPDATES" --no-epoch-checkpoints --no-last-checkpoints --keep-best-checkpoints 0
  --log-format simple --log-interval 100 --num-workers 0 "${DEV_FLAGS[@]}" ${EXTRA:-})
run() {  # name seed data task arch
  local name=$1 seed=$2 data=$3 task=$4 arch=$5 dir=$WORK/ckpt/$1_s$2
  [ -f "$dir/checkpoint_best.pt" ] && return 0
  mkdir -p "$dir"
  fairseq-train "$data" --user-dir "$REPO/fairseq_tree" --task "$task" --arch "$arch" --seed "$seed" \
    "${COMMON[@]}" --save-dir "$dir" > "$dir/train.log" 2>&1
}
jobs_list=()
for seed in $SEEDS; do
  jobs_list+=("tree2seq $seed $BIN tree_translation tree2seq"
              "transformer $seed $BIN translation transformer"
              "tree2seq_trivial $seed $TRIV tree_translation tree2seq")
done
for job in "${jobs_list[@]}"; do
  run $job &
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 5; done
done
wait

# 3. translate the test set (beam 5), detokenize, sacrebleu
for job in "${jobs_list[@]}"; do
  set -- $job
  dir=$WORK/ckpt/$1_s$2
  fairseq-generate "$3" --user-dir "$REPO/fairseq_tree" --task "$4" -s en -t de --path "$dir/checkpoint_best.pt" \
    --gen-subset test --beam 5 --batch-size 128 --remove-bpe --tokenizer moses --scoring sacrebleu \
    "${DEV_FLAGS[@]}" > "$dir/test.gen" 2>&1
done
"$PY" - "$WORK" $SEEDS <<'PYEOF'
import re, statistics, sys
work, seeds = sys.argv[1], sys.argv[2:]
rows = []
for name in ("transformer", "tree2seq", "tree2seq_trivial"):
    bleus = []
    for s in seeds:
        text = open(f"{work}/ckpt/{name}_s{s}/test.gen").read()
        bleus.append(float(re.search(r"BLEU = ([\d.]+)", text).group(1)))
    sd = statistics.stdev(bleus) if len(bleus) > 1 else 0.0
    rows.append(f"| {name} | {' / '.join(f'{b:.2f}' for b in bleus)} | {statistics.mean(bleus):.2f} ± {sd:.2f} |")
table = "| model | BLEU per seed | mean ± sd |\n|---|---|---|\n" + "\n".join(rows)
open(f"{work}/results.md", "w").write(table + "\n")
print(table)
PYEOF
