#!/usr/bin/env bash
# What a GPU machine without a package index needs to run the GPU checks (scripts/recipes/gpu_checks.sh), built
# on a machine with one: wheels of the plugin's pure-Python needs for the GPU machine's Python, fairseq-fixed's
# sdist cut to the extensions training and scoring use (the Cython batching helpers and libbleu: no torch C++
# extension, so it builds in ~25 s against whatever torch is there), and the data the checks read.
#
#   scripts/recipes/gpu_bundle.sh [BUNDLE=.gpu] [PYVER=3.12]
#   env: ANCHOR_BIN=DIR  a Multi30k anchor data-bin (scripts/recipes/multi30k_anchor.sh WORK/data-bin/en-de) for
#        the throughput probe; SHARED=../shared
#        TREE_BIN=DIR  a tree2seq en-de data-bin (e.g. the quick demo's work/quick/data-bin/multi30k.en-de) for
#        gpu_checks.sh phase `graphs`'s training throughput (train_throughput.sh, eager and CUDA graphs)
#        ANCHOR_WORK=DIR  a multi30k_anchor.sh work directory whose rows the `runs` phase trains on the card: its
#        data-bins, and the log, flags and last checkpoint of each unfinished run (the lease goes on from them)
# Then, on the GPU machine, in a copy of this checkout with BUNDLE beside its files:
#   bash scripts/recipes/gpu_checks.sh OUTDIR
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BUNDLE=${1:-$REPO/.gpu}; PYVER=${2:-3.12}
SHARED=${SHARED:-$REPO/../shared}
PY=${PYTHON:-python}  # the active environment (its pip downloads the wheels)
mkdir -p "$BUNDLE/whl" "$BUNDLE/shared/data" && BUNDLE=$(cd "$BUNDLE" && pwd)
plat=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp "${plat[@]}" \
  -d "$BUNDLE/whl" hydra-core==1.3.2 omegaconf==2.3.0 bitarray sacremoses subword-nmt mock nltk "setuptools>=77"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$PY" -m pip download -q --no-deps --no-build-isolation --no-binary :all: -d "$tmp" antlr4-python3-runtime==4.9.3 \
  fairseq-fixed==0.12.3.1
"$PY" -m pip wheel -q --no-deps --no-build-isolation "$tmp"/antlr4-python3-runtime-4.9.3.tar.gz -w "$BUNDLE/whl"
rm -rf "$BUNDLE/fairseq_src" && tar xzf "$tmp"/fairseq_fixed-0.12.3.1.tar.gz -C "$tmp"
mv "$tmp/fairseq_fixed-0.12.3.1" "$BUNDLE/fairseq_src" && rm -rf "$BUNDLE/fairseq_src/tests"
"$PY" - "$BUNDLE/fairseq_src/setup.py" <<'PYEOF'
import sys
p = sys.argv[1]; s = open(p).read()
anchor = 'cmdclass = {"build_ext": cpp_extension.BuildExtension}'
assert anchor in s, "fairseq's setup.py changed: cut its extensions by hand"
keep = '("fairseq.libbleu", "fairseq.data.data_utils_fast", "fairseq.data.token_block_utils_fast")'
s = s.replace(anchor, f"extensions = [e for e in extensions if e.name in {keep}]  # gpu_bundle.sh\n{anchor}", 1)
open(p, "w").write(s)
PYEOF
# wsj22 and wsj_text: the corpus and validation set of gpu_checks.sh's `induction` phase
for d in ptb_sample sst wsj22 wsj_text; do rm -rf "$BUNDLE/shared/data/$d"; cp -r "$SHARED/data/$d" "$BUNDLE/shared/data/"; done
if [ -n "${ANCHOR_BIN:-}" ]; then rm -rf "$BUNDLE/anchor_bin"; cp -r "$ANCHOR_BIN" "$BUNDLE/anchor_bin"; fi
if [ -n "${TREE_BIN:-}" ]; then rm -rf "$BUNDLE/tree_bin"; cp -r "$TREE_BIN" "$BUNDLE/tree_bin"; fi
[ -z "${ANCHOR_WORK:-}" ] || "$REPO/scripts/recipes/gpu_runs.sh" bundle "$ANCHOR_WORK" "$BUNDLE" "$SHARED"
du -sh "$BUNDLE"
