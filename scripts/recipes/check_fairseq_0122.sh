#!/usr/bin/env bash
# The plugin on the fairseq 0.12.2 release (issue 27): 0.12.2 imports only on Python <= 3.10, so this builds a
# Python 3.10 environment beside the project's (torch >= 2.6, 0.12.2's own hydra-core 1.0 / omegaconf 2.0, fairseq
# built from a v0.12.2 checkout) and runs each task end to end on tiny data: fairseq-train (2 updates, then a resume
# from checkpoint_last.pt under weights_only=True), fairseq-generate for tree2seq, and the hub. Prints one line per
# step and "fairseq 0.12.2: all OK" at the end.
#
#   scripts/checks/fairseq_0122.sh WORK_DIR
#   env: FAIRSEQ_SRC=a v0.12.2 checkout (git clone --branch v0.12.2 https://github.com/facebookresearch/fairseq)
#        PY310=python3.10  TORCH_SPEC=torch==2.14.1 (any torch >= 2.6 for your machine)
#        PYTHON=an existing Python with fairseq 0.12.2 importable (skips the build)
set -euo pipefail
WORK=${1:?WORK_DIR}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
SHARED=${SHARED:-$REPO/../shared}
export OMP_NUM_THREADS=1
if [ -z "${PYTHON:-}" ]; then
  PYTHON=$WORK/venv/bin/python
  if [ ! -f "$WORK/venv/.built" ]; then
    SRC=${FAIRSEQ_SRC:?FAIRSEQ_SRC=a v0.12.2 checkout of fairseq}
    "${PY310:-python3.10}" -m venv "$WORK/venv"
    "$PYTHON" -m pip install -q "pip<24.1" setuptools wheel  # omegaconf 2.0's metadata is refused by pip >= 24.1
    "$PYTHON" -m pip install -q "${TORCH_SPEC:-torch==2.14.1}" "numpy<2" cython
    "$PYTHON" -m pip install -q "hydra-core>=1.0.7,<1.1" "omegaconf<2.1" bitarray regex cffi sacrebleu tqdm \
      scikit-learn sacremoses subword-nmt
    "$PYTHON" -m pip install -q --no-deps --no-build-isolation -e "$SRC"
    touch "$WORK/venv/.built"
  fi
fi
"$PYTHON" -c "import fairseq, torch; assert fairseq.__version__ == '0.12.2', fairseq.__version__; print('fairseq', fairseq.__version__, 'torch', torch.__version__)"
UD=$REPO/fairseq_tree
D=$WORK/data && mkdir -p "$D"
PTB=$SHARED/data/ptb_sample
head -n 40 "$PTB/valid.mrg" > "$D/t.en"; head -n 40 "$PTB/valid.txt" | tr 'A-Z' 'a-z' > "$D/t.xx"
ok() { echo "ok: $*"; }
py() { PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" "$@"; }
train() {  # data task arch save extra...
  local data=$1 task=$2 arch=$3 save=$4; shift 4
  for upd in 2 3; do  # the second call resumes from checkpoint_last.pt (a safe load)
    py -m fairseq_cli.train "$data" --user-dir "$UD" --task "$task" --arch "$arch" --optimizer adam --lr 1e-3 \
      --max-update "$upd" --cpu --num-workers 0 --no-epoch-checkpoints --save-dir "$save" --log-format simple "$@" \
      > "$save.log.$upd" 2>&1 || { tail -n 30 "$save.log.$upd"; exit 1; }
  done
  grep -q "Loaded checkpoint" "$save.log.3" && ok "$task $arch: train, resume"
}
# tree2seq: the pipeline with given trees, train, generate, hub
py -m fairseq_tree.cli.preprocess -s en -t xx --trainpref "$D/t" --validpref "$D/t" --parser given --bpe-merges 100 \
  --joined-dictionary --destdir "$D/t2s" --workers 1 > "$D/t2s.log" 2>&1 && ok "fairseq-tree-preprocess"
train "$D/t2s" tree_translation tree2seq_tiny "$WORK/t2s" --share-all-embeddings --max-tokens 2000
py -m fairseq_cli.generate "$D/t2s" --user-dir "$UD" --task tree_translation --path "$WORK/t2s/checkpoint_last.pt" \
  --beam 2 --max-len-b 3 --cpu --batch-size 16 --gen-subset valid --scoring sacrebleu > "$WORK/t2s.gen" 2>&1 \
  || { tail -n 20 "$WORK/t2s.gen"; exit 1; }
[ "$(grep -c '^H-' "$WORK/t2s.gen")" = 40 ] || { echo "fairseq-generate: not 40 hypotheses"; exit 1; }
ok "fairseq-generate: 40 hypotheses"
py -c "from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel as M; import sys
h = M.from_pretrained('$WORK/t2s', 'checkpoint_last.pt', '$D/t2s'); print(type(h.translate(sys.argv[1], beam=1)).__name__)" \
  "$(head -n 1 "$D/t.en")" | grep -q str && ok "hub translate"
# the masked-LM tasks and the parser
head -n 200 "$PTB/train.txt" > "$D/lm.txt"
py -m fairseq_cli.preprocess --only-source --trainpref "$D/lm.txt" --validpref "$D/lm.txt" --destdir "$D/lm" \
  --workers 1 > /dev/null 2>&1
for arch in mlm_transformer_tiny constituent_transformer_tiny structformer_tiny; do
  train "$D/lm" tree_induction "$arch" "$WORK/$arch" --max-tokens 1500
done
mkdir -p "$D/ptb" && head -n 60 "$PTB/train.mrg" > "$D/ptb/train.mrg" && head -n 20 "$PTB/valid.mrg" > "$D/ptb/valid.mrg"
py -m fairseq_tree.data.parsing_data --train "$D/ptb/train.mrg" --valid "$D/ptb/valid.mrg" --destdir "$D/lal" \
  > "$D/lal.log" 2>&1
train "$D/lal" constituency_parsing lal_parser_tiny "$WORK/lal" --batch-size 10 --no-pos-tags
# tree classification: SST trees, the tree model and fairseq's TransformerEncoder baseline
head -n 80 "$SHARED/data/sst/train.txt" > "$D/sst.txt"
py -m fairseq_tree.cli.preprocess --task classification --labels nodes -s txt --trainpref "$D/sst" --validpref "$D/sst" \
  --destdir "$D/cls" --workers 1 > "$D/cls.log" 2>&1
train "$D/cls" tree_classification tree_classifier_tiny "$WORK/tc" --max-tokens 2000
train "$D/cls" tree_classification transformer_classifier_tiny "$WORK/tfc" --max-tokens 2000 --root-only
echo "fairseq 0.12.2: all OK"
