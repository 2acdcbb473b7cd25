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
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [ -x "$REPO/.venv/bin/python" ]; then PY="${PYTHON:-$REPO/.venv/bin/python}"; else PY="${PYTHON:-python3}"; fi
# the console script of the same environment as $PY, venv or not
exec "$(dirname "$(command -v "$PY")")/fairseq-tree-train-stanza" "$@"
