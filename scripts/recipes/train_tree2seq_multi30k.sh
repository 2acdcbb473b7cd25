#!/usr/bin/env bash
# Which trees help translation: fairseq's transformer and tree2seq given the trees of several parsers (same
# words, BPE, dictionaries, sizes and updates), several seeds, the last checkpoints averaged, beam 5, sacreBLEU
# on detokenized test output, next to each parser's F1 on wsj22 and ptb_sample/valid. Resumes where it stopped.
#
#   scripts/recipes/train_tree2seq_multi30k.sh DATA_BIN WORK_DIR
#     DATA_BIN: fairseq-tree-preprocess output for en-de with stanza trees (`make demo` writes
#               work/data-bin/multi30k.en-de); its {split}.en.trees, bpe.codes and dictionaries are reused.
#   env: TREES="stanza trivial"  tree sources: stanza (DATA_BIN's), trivial (right-branching over the same words
#                                and POS tags), lal (LAL_MODEL=CKPT, a lal_parser trained --no-pos-tags), induced
#                                (INDUCED_MODEL=CKPT, a structformer / constituent_transformer); LAL_DATA / INDUCED_DATA:
#                                their data directories when not the ones recorded in the checkpoints
#        MATCHED=""              tree sources whose positions-matched transformer is trained too (transformer_pm_SRC:
#                                fairseq's transformer on the leaves followed by the node labels of SRC's trees,
#                                fairseq-tree-positions-matched; as many encoder positions as tree2seq,
#                                no tree; batched as TREE_EXTRA's --tree-batch-by says)
#        TGTS="de"               target languages (de fr: en-fr gets its own joint BPE and dictionary, shared
#                                by its runs)
#        SEEDS="1 2 3"  UPDATES=6000 (--max-update; rerun with more to continue finished runs from their
#                       checkpoint_last.pt)  PATIENCE=0 (>0: fairseq's --patience, in validations)
#        AVERAGE=5 (the last N update checkpoints, every SAVE_EVERY=500 updates, are averaged; 1: checkpoint_best)
#        M30K=the directory DATA_BIN was made from (needs {train,valid,test}.{en,de,fr} for TGTS)
#        STANZA_DIR=the stanza model DATA_BIN was parsed with (for its F1)  DEVICE=cpu|cuda  PARALLEL=1
#        BASELINE=1 (0: no transformer runs, e.g. when adding tree sources to a table whose baseline exists)
#        QUALITY=1 (0: no parser F1)  EXTRA="..." more fairseq-train flags  GEN_EXTRA="..." more fairseq-generate flags
#        TREE_EXTRA="..." more fairseq-train flags of the tree2seq runs only (e.g. --tree-batch-by leaves: the
#                         transformer's batches, for a comparison at equal sentences per update)
# Writes WORK/trees/SRC/, WORK/data-bin/SRC.en-TGT/ (and pm_SRC.en-TGT/), WORK/ckpt/TGT/NAME_sSEED/ (train.log, flags.txt: a rerun
# with other flags stops, checkpoint_avg.pt, test.gen), WORK/quality/SRC/ and WORK/results.md.
set -euo pipefail
BIN=$(cd "${1:?DATA_BIN}" && pwd)
WORK=${2:?WORK_DIR}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python}  # the active environment
# the CLIs (fairseq-train, fairseq-generate, fairseq-tree-average) of the same environment as $PY, venv or not
export PATH=$(dirname "$(command -v "$PY")"):$PATH
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
# every run batches every sentence (fairseq's translation task too, by the plugin's opt-in): with
# --tree-batch-by leaves the tree2seq and transformer runs then see the same batches, as in RESULTS.md
export FAIRSEQ_TREE_KEEP_LEFTOVERS=1
SHARED=${SHARED:-$REPO/../shared}  # the gold treebanks of the trees' quality (data/wsj22, data/ptb_sample)
recorded() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['command'].get(sys.argv[2]) or '')" \
  "$BIN/preprocess.json" "$1"; }
M30K=${M30K:-$(dirname "$(recorded trainpref)")}
STANZA_DIR=${STANZA_DIR:-$(recorded stanza_model_dir)}
MERGES=$(recorded bpe_merges)
TREES=${TREES-stanza trivial}  # may be empty (MATCHED runs only)
MATCHED=${MATCHED:-}
TGTS=${TGTS:-de}
SEEDS=${SEEDS:-1 2 3}
UPDATES=${UPDATES:-6000}
PATIENCE=${PATIENCE:-0}
AVERAGE=${AVERAGE:-5}
SAVE_EVERY=${SAVE_EVERY:-500}
DEVICE=${DEVICE:-cpu}
PARALLEL=${PARALLEL:-1}
QUALITY=${QUALITY:-1}
BASELINE=${BASELINE:-1}
DEV_FLAGS=(--cpu); [ "$DEVICE" = cuda ] && DEV_FLAGS=(--fp16)
preprocess() { fairseq-tree-preprocess -s en --trainpref "$M30K/train" --validpref "$M30K/valid" \
  --testpref "$M30K/test" --joined-dictionary --on-error fail --workers 2 "$@"; }

# 1. the trees of each source, over the words of DATA_BIN's English side (checked by fairseq-tree-preprocess)
SOURCES=$(printf '%s\n' $TREES $MATCHED | awk '!seen[$0]++' | xargs)  # a positions-matched source needs its trees
for src in $SOURCES; do
  T=$WORK/trees/$src
  [ -f "$T/.done" ] && continue
  mkdir -p "$T"
  case $src in
    stanza) for s in train valid test; do cp "$BIN/$s.en.trees" "$T/"; done ;;
    trivial) for s in train valid test; do
               fairseq-tree-trivial-trees "$BIN/$s.en.trees" "$T/$s.en.trees" --shape right; done ;;
    lal|induced)
      model=$([ "$src" = lal ] && echo "${LAL_MODEL:?TREES has lal: LAL_MODEL=CKPT}" \
              || echo "${INDUCED_MODEL:?TREES has induced: INDUCED_MODEL=CKPT}")
      data=$([ "$src" = lal ] && echo "${LAL_DATA:-}" || echo "${INDUCED_DATA:-}")
      # parsed once, into the en-de data-bin (DATA_BIN's BPE and dictionary); its .en.trees serve every target
      preprocess -t de --parser "$src" --parser-model "$model" ${data:+--parser-data "$data"} --bpe-codes "$BIN/bpe.codes" \
        --srcdict "$BIN/dict.en.txt" --destdir "$WORK/data-bin/$src.en-de"
      for s in train valid test; do cp "$WORK/data-bin/$src.en-de/$s.en.trees" "$T/"; done ;;
    *) echo "unknown tree source $src (stanza trivial lal induced)" >&2; exit 2 ;;
  esac
  touch "$T/.done"
done

# 2. one data-bin per tree source and target; a target's runs share its BPE codes and joint dictionary
databin() {  # src (or pm_SRC) tgt -> path
  if [ "$2" = de ] && [ "$1" = stanza ]; then echo "$BIN"; else echo "$WORK/data-bin/$1.en-$2"; fi
}
for tgt in $TGTS; do
  REF=$(databin stanza "$tgt")
  if [ ! -f "$REF/preprocess.json" ]; then  # en-fr: BPE learned on en + fr with DATA_BIN's number of merges
    # over DATA_BIN's (stanza) trees, whatever TREES holds: the transformer and every tree source share it
    preprocess -t "$tgt" --parser given --trees-dir "$BIN" --bpe-merges "$MERGES" --destdir "$REF"
  fi
  for src in $SOURCES; do
    D=$(databin "$src" "$tgt")
    [ -f "$D/preprocess.json" ] || preprocess -t "$tgt" --parser given --trees-dir "$WORK/trees/$src" \
      --bpe-codes "$REF/bpe.codes" --srcdict "$REF/dict.en.txt" --destdir "$D"
  done
  for src in $MATCHED; do
    PM=$(databin "pm_$src" "$tgt")
    [ -f "$PM/positions_matched.json" ] \
      || fairseq-tree-positions-matched "$(databin "$src" "$tgt")" "$PM"
  done
done

# 3. train: identical flags and updates for every model (scripts/recipes/multi30k_flags.sh: 3+3 layers, d 256)
source "$REPO/scripts/recipes/multi30k_flags.sh"
# how long to train and what to keep: may change between reruns of a run (more UPDATES continue it)
SCHEDULE=(--max-update "$UPDATES" --patience "$([ "$PATIENCE" -gt 0 ] && echo "$PATIENCE" || echo -1)"
  --no-epoch-checkpoints --save-interval-updates "$SAVE_EVERY" --keep-interval-updates "$AVERAGE"
  --keep-best-checkpoints 0 --log-format simple --log-interval 100 --num-workers 0)
# the positions-matched transformers batch as the tree2seq runs do: by the leaves or by all positions
PM_FLAGS=(--pm-batch-by "$([[ " ${TREE_EXTRA:-} " == *" --tree-batch-by leaves "* ]] && echo leaves || echo positions)")
flags() {  # tgt name seed data task arch -> the flags that make the run what it is, one line (its flags.txt)
  local extra=()
  [ "$5" = tree_translation ] && extra=(${TREE_EXTRA:-})
  [ "$5" = positions_matched_translation ] && extra=("${PM_FLAGS[@]}")
  echo "$4 --task $5 --arch $6 --seed $3 -s en -t $1 ${MULTI30K_FLAGS[*]} ${DEV_FLAGS[*]} ${EXTRA:-} ${extra[*]}"
}
trained_updates() { grep -o "num_updates[= ][0-9]*" "$1/train.log" 2>/dev/null | tail -n 1 | grep -o "[0-9]*$" || echo 0; }
run() {  # tgt name seed data task arch
  local dir=$WORK/ckpt/$1/$2_s$3
  if [ -f "$dir/.done" ]; then
    # done, unless UPDATES grew (and no --patience stopped it): then it goes on from checkpoint_last.pt
    { [ "$PATIENCE" -gt 0 ] || [ "$(trained_updates "$dir")" -ge "$UPDATES" ]; } && return 0
    rm -f "$dir/.done" "$dir/test.gen" "$dir/checkpoint_avg.pt"
  fi
  mkdir -p "$dir"
  flags "$@" > "$dir/flags.txt"
  # exactly the flags recorded (word-split as before: none holds a space), after the schedule so that EXTRA and
  # TREE_EXTRA still override it; resumes from checkpoint_last.pt when there is one
  fairseq-train --user-dir "$REPO/fairseq_tree" "${SCHEDULE[@]}" --save-dir "$dir" $(flags "$@") \
    >> "$dir/train.log" 2>&1 && touch "$dir/.done"
}
jobs_list=()
for tgt in $TGTS; do
  for seed in $SEEDS; do
    if [ "$BASELINE" = 1 ]; then
      jobs_list+=("$tgt transformer $seed $(databin stanza "$tgt") translation transformer")
    fi
    for src in $TREES; do
      jobs_list+=("$tgt tree2seq_$src $seed $(databin "$src" "$tgt") tree_translation tree2seq")
    done
    for src in $MATCHED; do
      jobs_list+=("$tgt transformer_pm_$src $seed $(databin "pm_$src" "$tgt") positions_matched_translation transformer")
    done
  done
done
# a run directory holds one configuration: resuming or extending it with other flags (TREE_EXTRA, EXTRA, another
# data-bin) would mix two trainings under one name
for job in "${jobs_list[@]}"; do
  set -- $job
  f=$WORK/ckpt/$1/$2_s$3/flags.txt
  if [ -f "$f" ] && [ "$(cat "$f")" != "$(flags $job)" ]; then
    printf '%s\n' "$f: this run was trained with other flags; use another WORK_DIR" "  was: $(cat "$f")" \
      "  now: $(flags $job)" >&2
    exit 2
  fi
done
for job in "${jobs_list[@]}"; do
  run $job &
  while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do sleep 5; done
done
wait
for job in "${jobs_list[@]}"; do
  set -- $job
  [ -f "$WORK/ckpt/$1/$2_s$3/.done" ] || { echo "training failed: $WORK/ckpt/$1/$2_s$3/train.log" >&2; exit 1; }
done

# 4. average the last AVERAGE checkpoints, translate the test set (beam 5), detokenize, sacrebleu
for job in "${jobs_list[@]}"; do
  set -- $job
  dir=$WORK/ckpt/$1/$2_s$3
  [ -f "$dir/test.gen" ] && grep -q "BLEU = " "$dir/test.gen" && continue
  if [ "$AVERAGE" -gt 1 ]; then
    fairseq-tree-average --inputs "$dir" --num-update-checkpoints "$AVERAGE" --output "$dir/checkpoint_avg.pt"
  else
    cp "$dir/checkpoint_best.pt" "$dir/checkpoint_avg.pt"
  fi
  fairseq-generate "$4" --user-dir "$REPO/fairseq_tree" --task "$5" -s en -t "$1" --path "$dir/checkpoint_avg.pt" \
    --gen-subset test --beam 5 --batch-size 128 --remove-bpe --tokenizer moses --scoring sacrebleu \
    "${DEV_FLAGS[@]}" ${GEN_EXTRA:-} > "$dir/test.gen.tmp" 2>&1 \
    || { echo "generation failed: $dir/test.gen.tmp" >&2; exit 1; }
  mv "$dir/test.gen.tmp" "$dir/test.gen"
done

# 5. each tree source's quality on gold treebanks (the words only, as the pipeline parses)
if [ "$QUALITY" = 1 ]; then
  mkdir -p "$WORK/quality"
  for src in $TREES; do
    Q=$WORK/quality/$src
    [ -f "$Q/scores.jsonl" ] && continue
    case $src in
      stanza) opts=(--parser stanza --stanza-model-dir "${STANZA_DIR:?STANZA_DIR}") ;;
      trivial) opts=(--parser right) ;;
      lal) opts=(--parser lal --parser-model "$LAL_MODEL" ${LAL_DATA:+--parser-data "$LAL_DATA"}) ;;
      induced) opts=(--parser induced --parser-model "$INDUCED_MODEL" ${INDUCED_DATA:+--parser-data "$INDUCED_DATA"}) ;;
    esac
    fairseq-tree-parser-quality "${opts[@]}" --gold "$SHARED/data/wsj22/wsj22.mrg" "$SHARED/data/ptb_sample/valid.mrg" \
      --out "$Q" > "$Q.tmp"  # set -e stops on failure
    mv "$Q.tmp" "$Q/scores.jsonl"
  done
fi

fairseq-tree-report tree2seq "$WORK" --tgts $TGTS --trees $TREES ${MATCHED:+--matched $MATCHED} --seeds $SEEDS \
  $([ "$BASELINE" = 1 ] || echo --no-baseline) | tee "$WORK/results.md"
