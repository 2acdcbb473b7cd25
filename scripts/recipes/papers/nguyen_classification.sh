#!/usr/bin/env bash
# Nguyen et al. 2020 (ICLR): Table 2 (SST-5, SST-2, IMDB, subject-verb agreement) and Table 3's SST-5 ablations:
# the tree classifier beside fairseq's Transformer encoder of the same tiny size (2 layers, d 64, 4 heads) on the
# same data-bin, 15K updates each, test accuracy beside the paper's.
#
#   scripts/recipes/papers/nguyen_classification.sh WORK
#   env: TASK=sst | imdb | sva
#        sst:  the Stanford Sentiment Treebank (trainDevTestTrees_PTB.zip); trained and scored by
#              scripts/recipes/train_sst.sh (its RUNS, SEEDS, TASKS="sst5 sst2", JOBS; the ablations are its
#              tree_nohier, tree_nosubmask, tree_nohier_nosubmask), here with TEST=1 (the test split scored)
#        imdb: aclImdb_v1.tar.gz; each review cut into sentences (a rule splitter), each sentence parsed, a
#              document's trees under one dummy root (Appendix 7.4)
#        sva:  Linzen et al. 2016's agr_50_mostcommon_10K.tsv.gz: the words before the verb, the verb's number
#        RUNS="transformer tree" SEEDS="1"  PARSER=stanza | trivial (IMDB, SVA; STANZA_MODEL_DIR=DIR or download)
#        SOURCE_BASE=URL_OR_DIR  UPDATES=15000  MAX_TOKENS  WORKERS=4  EXTRA  and lib.sh's DRY_RUN, STOP_AFTER, DEVICE
#
# Writes WORK/orig, WORK/TASK/ (text, trees), WORK/data-bin/TASK, WORK/runs/RUN_sSEED/{train.log,test.json} (SST:
# WORK/sst/... as train_sst.sh writes it), WORK/results.md.
RECIPE="Nguyen et al. 2020 Table 2 / Table 3 (classification)"
. "$(dirname "$0")/lib.sh"
WORK=${1:?usage: nguyen_classification.sh WORK (env TASK=sst|imdb|sva)}
dry || { mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd); }
TASK=${TASK:-sst}
RUNS=${RUNS:-"transformer tree"}
SEEDS=${SEEDS:-1}
PARSER=${PARSER:-stanza}
WORKERS=${WORKERS:-4}
UPDATES=${UPDATES:-15000}
case $TASK in
  sst) FILE=trainDevTestTrees_PTB.zip; URL=https://nlp.stanford.edu/sentiment/$FILE
    sized_for "one NVIDIA H100 80GB" "15K updates of 2K tokens per run (tiny models), 24 runs by default
# (3 seeds of the tree classifier and two Transformer baselines, the ablations once; SST-5 and SST-2): ~3 GPU-hours" ;;
  imdb) FILE=aclImdb_v1.tar.gz; URL=http://ai.stanford.edu/~amaas/data/sentiment/$FILE
    MAX_POSITIONS=${MAX_POSITIONS:-6144}; MAX_TOKENS=${MAX_TOKENS:-8192}
    sized_for "one NVIDIA H100 80GB" "15K updates per run (tiny models); lr 0.01, 20 warmup updates, dropout 0.2
# (Appendix 7.4); whole reviews as one tree (up to ~5K leaves + nodes): ~1 GPU-hour to parse, ~0.5 per run" ;;
  sva) FILE=agr_50_mostcommon_10K.tsv.gz; URL=http://tallinzen.net/media/rnn_agreement/$FILE
    MAX_POSITIONS=${MAX_POSITIONS:-1024}; MAX_TOKENS=${MAX_TOKENS:-2048}
    sized_for "one NVIDIA H100 80GB" "15K updates of 2K tokens per run (tiny models); lr 0.01, 20 warmup updates,
# dropout 0.2 (Appendix 7.4); 1.5M sentence prefixes to parse: ~3 GPU-hours, ~0.3 per run" ;;
  *) echo "unknown TASK $TASK (sst, imdb, sva)" >&2; exit 2 ;;
esac
[ -n "${SOURCE_BASE:-}" ] && URL=$SOURCE_BASE/$FILE

if step fetch "0.1 GB" 0 "download $FILE"; then
  fetch "$URL" "$WORK/orig/$FILE"
  helper extract "$WORK/orig/$FILE" "$WORK/orig/unpacked"
  done_step
fi

if [ "$TASK" = sst ]; then  # scripts/recipes/train_sst.sh: its data, runs and table, on the published splits
  if step train_sst "1 GB" 3 "scripts/recipes/train_sst.sh on SST-5 and SST-2, the test split scored"; then
    SST_RUN=(env SST="$WORK/orig/unpacked/trees" TEST=1 DEVICE="$DEVICE" bash "$REPO/scripts/recipes/train_sst.sh"
      "$WORK/unused" "$WORK/sst")
    # with DRY_RUN=1 too: train_sst.sh prints its own steps and commands
    if dry; then echo "  \$ $(show "${SST_RUN[@]}")"; fi
    "${SST_RUN[@]}"
    done_step
  fi
  if dry; then echo; fi
  for t in ${TASKS:-sst5 sst2}; do
    x_out "$WORK/results_$t.md" "$PY" "$PAPERS/papers.py" table nguyen-table2 "$WORK/sst" --row "$t"
  done
  dry || cat "$WORK"/results_sst*.md
  exit 0
fi

T=$WORK/$TASK
if step text "1 GB" 0 "sentences, labels and splits"; then
  case $TASK in
    imdb) helper imdb "$WORK/orig/unpacked/aclImdb" "$T" ;;
    sva) helper sva "$WORK/orig/unpacked/agr_50_mostcommon_10K.tsv" "$T/text" ;;
  esac
  done_step
fi
SENTS=$T/text; [ "$TASK" = imdb ] && SENTS=$T/sents
if step parse "1 GB" "$([ "$TASK" = imdb ] && echo 1 || echo 3)" "parse every sentence ($PARSER)"; then
  case $PARSER in
    stanza)
      STANZA=(--stanza-download); [ -n "${STANZA_MODEL_DIR:-}" ] && STANZA=(--stanza-model-dir "$STANZA_MODEL_DIR")
      x fairseq-tree-preprocess --only-source -s en --trainpref "$SENTS/train" --validpref "$SENTS/valid" \
        --testpref "$SENTS/test" --tokenize none --parser stanza "${STANZA[@]}" --device "${PARSE_DEVICE:-$DEVICE}" \
        --workers "$WORKERS" --on-error skip --destdir "$T/parse" ;;
    trivial) helper trivial-trees "$SENTS" "$T/parse" --src en ;;
    *) echo "unknown PARSER $PARSER (stanza, trivial)" >&2; exit 2 ;;
  esac
  done_step
fi
TREES=$T/parse; TEXT=$SENTS
if [ "$TASK" = imdb ]; then
  if step join "1 GB" 0 "each review's sentence trees on one line (one dummy root)"; then
    helper imdb-join "$SENTS" "$T/parse" "$T/docs"
    done_step
  fi
  TREES=$T/docs; TEXT=$T/docs
fi
CLASSES=VBZ,VBP; [ "$TASK" = imdb ] && CLASSES=neg,pos
# a line left without a tree (a sentence the parser failed on) or over MAX_POSITIONS is left out and listed in
# WORK/data-bin/TASK/preprocess.json
if step binarize "1 GB" 0 "binarize the trees and classes (node inputs: the parser's labels)"; then
  x fairseq-tree-preprocess --task classification --labels file -s en -t label --class-names "$CLASSES" \
    --trainpref "$TEXT/train" --validpref "$TEXT/valid" --testpref "$TEXT/test" --tokenize none --parser given \
    --trees-dir "$TREES" --node-inputs syntax --max-positions "$MAX_POSITIONS" --workers "$WORKERS" --on-error skip \
    --destdir "$WORK/data-bin/$TASK"
  done_step
fi

# the tree classifier and the Transformer encoder: the same data-bin, optimiser, schedule and batch size
for seed in $SEEDS; do
  for run in $RUNS; do
    case $run in
      tree) ARCH=(--arch "${ARCH_TREE:-tree_classifier_tiny}") ;;
      transformer) ARCH=(--arch "${ARCH_SEQ:-transformer_classifier_tiny}" --root-only) ;;
      *) echo "unknown run $run (tree, transformer)" >&2; exit 2 ;;
    esac
    dir=$WORK/runs/${run}_s$seed
    if step "train-${run}_s$seed" "0.2 GB" 0.5 "train $run, seed $seed"; then
      train "$dir" "$WORK/data-bin/$TASK" --user-dir "$USER_DIR" --task tree_classification "${ARCH[@]}" \
        --max-positions "$MAX_POSITIONS" --optimizer adam --adam-betas '(0.9,0.98)' --lr 0.01 \
        --lr-scheduler inverse_sqrt --warmup-updates 20 --warmup-init-lr 1e-07 --dropout 0.2 \
        --max-tokens "$MAX_TOKENS" --max-update "$UPDATES" --seed "$seed" --best-checkpoint-metric accuracy \
        --maximize-best-checkpoint-metric --no-epoch-checkpoints --log-format simple --log-interval 100 ${EXTRA:-}
      done_step
    fi
    if step "test-${run}_s$seed" "0 GB" 0.1 "test accuracy of the checkpoint with the best validation accuracy"; then
      x_log "$dir/test.log" fairseq-validate "$WORK/data-bin/$TASK" --user-dir "$USER_DIR" --task tree_classification \
        --path "$dir/checkpoint_best.pt" --valid-subset test --max-tokens "$MAX_TOKENS" \
        $([ "$DEVICE" = cpu ] && echo --cpu)
      x_out "$dir/test.json" "$PY" "$PAPERS/papers.py" accuracy "$dir/test.log"
      done_step
    fi
  done
done
x_out "$WORK/results.md" "$PY" "$PAPERS/papers.py" table nguyen-table2 "$WORK" --row "$TASK"
dry || cat "$WORK/results.md"
