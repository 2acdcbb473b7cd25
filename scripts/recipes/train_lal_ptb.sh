#!/usr/bin/env bash
# Train and evaluate the LAL parser on the PTB sample (CPU), in up to four settings: POS tags in or not,
# label heads tied to labels or not. Model selection on wsj22 (valid subset, labeled span F1 in the loop);
# final EVALB-rule F1 / UAS / LAS with fairseq-tree-parse on ptb_sample/valid (gold tags) and wsj22 (its
# predicted tags; models trained --no-pos-tags predict their own).
#
#   scripts/recipes/train_lal_ptb.sh [SHARED=../shared] [WORK=work/lal_ptb]
#   env: MINUTES=5 (training time per setting, in all: a rerun resumes from the checkpoint and trains the rest),
#        PATIENCE=0 (> 0: also stop once wsj22 F1 has not improved for that many validations, 150 updates apart;
#        counted over the whole log, as fairseq counts afresh after a resume), ARCH=lal_parser_small,
#        CONFIGS="tags_untied tags_tied notags_untied notags_tied stanza", EXTRA="..." (more fairseq-train flags),
#        STANZA_SIZE=small (the `stanza` setting: stanza's tagger + constituency parser trained on the same
#        data by scripts/recipes/train_stanza_parser.sh, dev = wsj22, scored by the same scorer; it predicts its own
#        tags and has no dependencies)
#        LOWERCASE=1: the treebanks' words lowercased first (WORK/lowercased/, tags and labels kept), for a parser of
#        lowercased text (the Multi30k anchor's English, scripts/recipes/multi30k_anchor.sh LAL_MODEL=...)
#
# Writes WORK/data-bin (binarized: train = ptb_sample/train + .conllu, valid = wsj22 + .sd.conll,
# test = ptb_sample/valid + .conllu), WORK/ckpt_CONFIG/, WORK/parse_CONFIG_{ptbvalid,wsj22}.{trees,conllu},
# WORK/results.md (one table row per setting) and WORK/attention_CONFIG.png.
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/lal_ptb}
MINUTES=${MINUTES:-5}
ARCH=${ARCH:-lal_parser_small}
CONFIGS=${CONFIGS:-"tags_untied tags_tied notags_untied notags_tied stanza"}
STANZA_SIZE=${STANZA_SIZE:-small}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
EXTRA=${EXTRA:-}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=${MKL_NUM_THREADS:-1}
PY=${PYTHON:-python}
export PATH=$(dirname "$(command -v "$PY")"):$PATH  # its console scripts (fairseq-train, fairseq-tree-*)
D=$SHARED/data
mkdir -p "$WORK"
if [ "${LOWERCASE:-0}" = 1 ]; then  # the same files with lowercased words: leaves of the trees, FORM and LEMMA
  L=$WORK/lowercased
  if [ ! -f "$L/.done" ]; then
    mkdir -p "$L/ptb_sample" "$L/wsj22"
    $PY - "$D" "$L" <<'PYEOF'
import re, sys
d, out = sys.argv[1:3]
leaf = re.compile(r"\(([^\s()]+) ([^\s()]+)\)")
for f in ("ptb_sample/train.mrg", "ptb_sample/valid.mrg", "wsj22/wsj22.mrg"):
    text = open(f"{d}/{f}", encoding="utf-8").read()
    open(f"{out}/{f}", "w", encoding="utf-8").write(leaf.sub(lambda m: f"({m[1]} {m[2].lower()})", text))
for f in ("ptb_sample/train.conllu", "ptb_sample/valid.conllu", "wsj22/wsj22.sd.conll"):
    lines = []
    for line in open(f"{d}/{f}", encoding="utf-8").read().split("\n"):
        cols = line.split("\t")
        if len(cols) >= 3 and not line.startswith("#"):
            cols[1], cols[2] = cols[1].lower(), cols[2].lower()
        lines.append("\t".join(cols))
    open(f"{out}/{f}", "w", encoding="utf-8").write("\n".join(lines))
PYEOF
    touch "$L/.done"
  fi
  D=$L
fi
if [ ! -f "$WORK/data-bin/parsing.json" ]; then
  fairseq-tree-parsing-data --destdir "$WORK/data-bin" \
    --train "$D/ptb_sample/train.mrg" --train-dep "$D/ptb_sample/train.conllu" \
    --valid "$D/wsj22/wsj22.mrg" --valid-dep "$D/wsj22/wsj22.sd.conll" \
    --test "$D/ptb_sample/valid.mrg" --test-dep "$D/ptb_sample/valid.conllu"
fi
HOURS=$($PY -c "print($MINUTES / 60)")
[ -f "$WORK/results.md" ] || printf '| setting | arch | updates | ptb_sample/valid F1 | UAS | LAS | wsj22 F1 | UAS | LAS |\n|---|---|---|---|---|---|---|---|---|\n' > "$WORK/results.md"
for C in $CONFIGS; do
  if [ "$C" = stanza ]; then
    SM=$WORK/stanza_$STANZA_SIZE
    if [ ! -f "$SM/model_info.json" ]; then
      mkdir -p "$WORK/stanza_treebank"
      ln -sf "$(cd "$D/ptb_sample" && pwd)/train.mrg" "$WORK/stanza_treebank/train.mrg"
      ln -sf "$(cd "$D/wsj22" && pwd)/wsj22.mrg" "$WORK/stanza_treebank/wsj22.mrg"   # the dev set
      bash "$REPO/scripts/recipes/train_stanza_parser.sh" "$WORK/stanza_treebank" "$SM" --size "$STANZA_SIZE" > "$WORK/train_stanza.log" 2>&1
    fi
    $PY - "$SM" "$D" "$WORK" "$STANZA_SIZE" >> "$WORK/results.md" <<'PYEOF'
import json, sys, time
from fairseq_tree.trees import read_parse_trees
from fairseq_tree.evaluation.bracket_f1 import bracket_f1
from fairseq_tree.parsers.stanza_parser import StanzaParser
sm, d, w, size = sys.argv[1:5]
parser = StanzaParser(model_dir=sm)
row = []
for name, gold_path in (("ptbvalid", f"{d}/ptb_sample/valid.mrg"), ("wsj22", f"{d}/wsj22/wsj22.mrg")):
    gold = list(read_parse_trees(gold_path))
    t0 = time.time()
    brackets = parser.parse([g.words for g in gold])
    out = f"{w}/parse_stanza_{name}.trees"
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(" ".join(b.split()) for b in brackets) + "\n")
    s = bracket_f1(gold, list(read_parse_trees(out)))
    print(f"stanza {name}: {s} ({len(gold) / (time.time() - t0):.1f} sentences/s)", file=sys.stderr)
    row.append(f"{s['f1']:.2f} | - | -")
print(f"| stanza ({size}, own tags) | stanza | - | " + " | ".join(row) + " |")
PYEOF
    tail -1 "$WORK/results.md"
    continue
  fi
  FLAGS=""
  case $C in *notags*) FLAGS="$FLAGS --no-pos-tags";; esac
  case $C in *_tied) FLAGS="$FLAGS --lal-tie-heads";; esac
  CK=$WORK/ckpt_$C
  STOP=""  # a resumed run whose log already holds its patience stop trains no more
  [ "${PATIENCE:-0}" -gt 0 ] && [ -f "$WORK/train_$C.log" ] && \
    STOP=$(fairseq-tree-report patience "$WORK/train_$C.log" --patience "$PATIENCE" --maximize)
  [ -n "$STOP" ] || fairseq-train "$WORK/data-bin" --user-dir fairseq_tree --task constituency_parsing --arch "$ARCH" $FLAGS \
    --criterion span_hinge_dependency --optimizer adam --adam-betas '(0.9,0.98)' --lr 2e-3 \
    --lr-scheduler inverse_sqrt --warmup-updates 100 --clip-norm 5 --max-tokens 1000 --max-positions 152 --cpu --seed 1 \
    --max-epoch 1000 --stop-time-hours "$HOURS" --save-dir "$CK" --no-epoch-checkpoints \
    --best-checkpoint-metric f1 --maximize-best-checkpoint-metric --validate-interval-updates 150 --skip-invalid-size-inputs-valid-test \
    --save-interval-updates 150 --keep-interval-updates 1 --log-format simple --log-interval 20 \
    --patience "${PATIENCE:-0}" $EXTRA >> "$WORK/train_$C.log" 2>&1
  UPD=$(grep -o 'num_updates [0-9]*' "$WORK/train_$C.log" | tail -1 | awk '{print $2}')
  for S in ptbvalid wsj22; do
    if [ $S = ptbvalid ]; then IN=$D/ptb_sample/valid.mrg; DEP=$D/ptb_sample/valid.conllu; else IN=$D/wsj22/wsj22.mrg; DEP=$D/wsj22/wsj22.sd.conll; fi
    PLOT=""; [ $S = ptbvalid ] && PLOT="--plot"
    fairseq-tree-parse --path "$CK/checkpoint_best.pt" --input "$IN" --gold "$IN" \
      --gold-dep "$DEP" --output "$WORK/parse_${C}_$S" $PLOT | tail -1 > "$WORK/scores_${C}_$S.json"
  done
  [ -f "$WORK/parse_${C}_ptbvalid.attention.png" ] && mv "$WORK/parse_${C}_ptbvalid.attention.png" "$WORK/attention_$C.png"
  $PY - "$WORK" "$C" "$ARCH" "$UPD" >> "$WORK/results.md" <<'PYEOF'
import json, sys
w, c, arch, upd = sys.argv[1:5]
s = [json.load(open(f"{w}/scores_{c}_{x}.json")) for x in ("ptbvalid", "wsj22")]
print(f"| {c} | {arch} | {upd} | " + " | ".join(f"{d['f1']:.2f} | {d['uas']:.2f} | {d['las']:.2f}" for d in s) + " |")
PYEOF
  tail -1 "$WORK/results.md"
done
cat "$WORK/results.md"
