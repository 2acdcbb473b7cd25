#!/usr/bin/env bash
# Train stanza's POS tagger + constituency parser offline on local PTB bracket files.
#   scripts/recipes/train_stanza_parser.sh TREEBANK_DIR OUTDIR [--size tiny|small|base] [--max-train N] [...]
# Writes OUTDIR/{pos.pt,constituency.pt,pretrain.pt,resources.json,model_info.json}; use them with
#   fairseq-tree-preprocess --stanza-model-dir OUTDIR ...
# All options: fairseq-tree-train-stanza --help
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 TREEBANK_DIR OUTDIR [--size tiny|small|base] [more options of fairseq-tree-train-stanza]" >&2
    exit 2
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
# the active environment's python (or $PYTHON), as the other recipes: not a checkout's .venv
PY=${PYTHON:-python}
CMD=$(command -v "$PY") || { echo "$0: no $PY on PATH (set PYTHON=/path/to/python)" >&2; exit 2; }
BIN=$(dirname "$CMD")
if [ ! -x "$BIN/fairseq-tree-train-stanza" ]; then
    echo "$0: fairseq-tree-train-stanza is not installed beside $PY ($BIN): pip install 'fairseq-tree[stanza]'" \
         "in that environment, or set PYTHON to the python of one that has it" >&2
    exit 2
fi
exec "$BIN/fairseq-tree-train-stanza" "$@"
