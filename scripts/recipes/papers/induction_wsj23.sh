#!/usr/bin/env bash
# Unsupervised parsing on the Penn Treebank, scored on WSJ23 as the papers do: Wang et al. 2019 (constituent
# attention, Table 1: trained on WSJ 02-21, or on WSJ-all) and Shen et al. 2021 (StructFormer, Table 2: trained on
# WSJ 02-21; UF1, and Stanford-dependency UAS / UUAS). The treebank is the one input; the training, the model
# selection (wsj22 UF1) and the scoring are scripts/recipes/induction_wsj.sh's, run on the user's sections.
#
#   scripts/recipes/papers/induction_wsj23.sh PTB_DIR WORK
#   PTB_DIR: LDC99T42's parsed/mrg/wsj (sections 00-24 of wsj_*.mrg), or a folder holding it; DEPS_DIR (default
#            PTB_DIR/deps) holds wsj22.sd.conll and wsj23.sd.conll, the sections' Stanford basic dependencies 3.3.0
#            (CoreNLP: java edu.stanford.nlp.trees.EnglishGrammaticalStructure -treeFile wsj_23.mrg -basic -conllx)
#   env: MODEL=wang | shen   TRAIN=02-21 | all (Wang's WSJ-all: every section, 22 and 23 included)   SEEDS="1 2 3"
#        ARCH (default: the paper's size), MAX_UPDATE, PATIENCE=1000 (validations without a better wsj22 UF1;
#        the papers stop by their budget), and lib.sh's DRY_RUN, STOP_AFTER, DEVICE
#
# Writes WORK/shared/data (the sections in induction_wsj.sh's layout: ptb_sample/train.mrg = the training sections,
# wsj22/ = section 22, ptb_sample/valid.mrg = section 23), WORK/induction (induction_wsj.sh's runs: its
# `ptbvalid` rows are WSJ23 here), WORK/results.md.
RECIPE="Wang et al. 2019 Table 1 / Shen et al. 2021 Table 2 (unsupervised parsing, WSJ23)"
. "$(dirname "$0")/lib.sh"
PTB=${1:?usage: induction_wsj23.sh PTB_DIR WORK}
WORK=${2:?usage: induction_wsj23.sh PTB_DIR WORK}
dry || { mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd); }
MODEL=${MODEL:-wang}
TRAIN=${TRAIN:-02-21}
SEEDS=${SEEDS:-"1 2 3"}
CORPUS=ptb; [ "$TRAIN" = all ] && CORPUS=wsj_all
case $MODEL in
  wang)  # Section 7.2 and the authors' code: Adam 1e-4 (0.9, 0.98), no warmup or decay, clip 1.5, 64 sentences, 60K
    ARCH=${ARCH:-constituent_transformer}; MAX_UPDATE=${MAX_UPDATE:-60000}; GPU=1.5
    HYPER="--lr 1e-4 --adam-betas (0.9,0.98) --adam-eps 1e-9 --lr-scheduler fixed --warmup-updates 0 --clip-norm 1.5
      --weight-decay 0 --batch-size 64 --max-tokens 4096"
    TABLE=wang-table1; [ "$TRAIN" = all ] && TABLE=wang-table1-all
    sized_for "one NVIDIA H100 80GB, fp16" "60K updates of 64 sentences, 10 layers (Section 7.2, the authors'
# README): ~1.5 GPU-hours a seed here" ;;
  shen)  # the authors' code: Adam 3e-4, eps 1e-9, L2 1.2e-6, clip 0.25, 4,096 tokens, 100 epochs (~25K updates)
    ARCH=${ARCH:-structformer}; MAX_UPDATE=${MAX_UPDATE:-25000}; GPU=1
    HYPER="--lr 3e-4 --adam-betas (0.9,0.999) --adam-eps 1e-9 --lr-scheduler fixed --warmup-updates 0 --clip-norm 0.25
      --weight-decay 1.2e-6 --max-tokens 4096"
    TABLE=shen-table2
    sized_for "one NVIDIA H100 80GB, fp16" "100 epochs of 4,096-token batches, 8 layers (the authors' code):
# ~1 GPU-hour a seed here" ;;
  *) echo "unknown MODEL $MODEL (wang, shen)" >&2; exit 2 ;;
esac
[ "$MODEL" = shen ] && [ "$TRAIN" = all ] && { echo "Shen et al. train on WSJ 02-21 only: TRAIN=02-21" >&2; exit 2; }
DEPS=${DEPS_DIR:-$PTB/deps}

if step layout "0.1 GB" 0 "the WSJ sections in induction_wsj.sh's layout (train $TRAIN, select 22, test 23)"; then
  helper ptb-layout "$PTB" "$DEPS" "$WORK/shared" --train "$TRAIN"
  done_step
fi
# induction_wsj.sh: training text (words only, lower-cased, digits -> N, punctuation dropped), fairseq-train with
# the flags below (EXTRA: the paper's optimiser over its defaults), selection by wsj22 UF1, fairseq-tree-induce
n_seeds=$(echo $SEEDS | wc -w)
if step "train-$MODEL" "$((2 * n_seeds)) GB" "$(awk "BEGIN { print $GPU * $n_seeds }")" \
    "induction_wsj.sh: train $ARCH on $CORPUS, seeds $SEEDS; induce and score wsj22 and WSJ23"; then
  x env RUNS="$ARCH" SEEDS="$SEEDS" CORPUS="$CORPUS" MAX_UPDATE="$MAX_UPDATE" PATIENCE="${PATIENCE:-1000}" \
    DEVICE="$DEVICE" EXTRA="$(echo $HYPER)" bash "$REPO/scripts/recipes/induction_wsj.sh" "$WORK/shared" \
    "$WORK/induction"
  done_step
fi
x_out "$WORK/results.md" "$PY" "$PAPERS/papers.py" table "$TABLE" "$WORK"
dry || cat "$WORK/results.md"
