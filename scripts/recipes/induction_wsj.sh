#!/usr/bin/env bash
# Tree induction under the papers' protocol on the WSJ text we have (issue 49): train on WSJ text that is never
# scored, select by wsj22 UF1, stop by patience counted across resumes, report wsj22 and ptb_sample/valid.
#
#   scripts/recipes/induction_wsj.sh [SHARED=../shared] [WORK=work/induction_wsj]
#   env: RUNS="structformer_small constituent_transformer_small" (archs: "" suffix = the papers' sizes)
#        SEEDS="1 2 3"  CORPUS=wsj  PATIENCE=10 (validations without a better wsj22 UF1)
#        VALIDATE=1000 (updates) | epoch (a validation at the end of each epoch, as the authors' loops do)
#        MAX_UPDATE=200000  DEVICE=cpu|cuda  THREADS=1  POLL=30  EXTRA="..." (more fairseq-train flags; recorded)
#        STOP_AFTER=UPDATES (this call trains a run to at most that many updates: a resumable slice, e.g. a GPU lease)
#        VARIANTS="paper" | "paper code" | "code" | "code_model": code = the model as its authors' code trains it;
#        its runs are ARCH_code_sSEED. StructFormer (reference_code_notes.md 4): its model flags, unscaled
#        embeddings, linear LM head, their init (--sf-code-init, U(-0.1, 0.1) embeddings), dropout after the FFN's
#        activation and none on the embeddings, the calibration over the batch, Bernoulli masks, Adam (0.9, 0.999)
#        eps 1e-9 with weight decay 1.2e-6 in the gradient (adam_l2), clip 0.25, lr 1e-3, no warmup, kept fixed
#        (SCHEDULE=plateau: halved as their main.py does, after 3 epochs without a lower validation loss:
#        --lr-scheduler loss_plateau, with VALIDATE=epoch; RESULTS.md says which rows use which). code_model
#        (StructFormer only; runs ARCH_code_model_sSEED): their model and optimizer settings with ours for the
#        init, dropouts, calibration, masks and decay (decoupled): the runs RESULTS.md calls "ours" (until
#        2026-11-29 this was VARIANTS=code; their training choices gain 0.8 wsj22 UAS over it). Constituent attention
#        (yaushian/Tree-Transformer, reference_code_notes.md 1): link scale 256, C_ii ~ 0, the links' own
#        LayerNorm, their parse (min layer 2, the 0.7 rule), [CLS] in the link chain, their untied output layer
#        and xavier init, each word, [CLS] and [UNK] predicted with p = 1/7, 64 random sentences a batch (not
#        sorted by length), Adam lr 1e-4 (0.9, 0.98) eps 1e-9, no weight decay, clip 1.5, fixed lr, no warmup
#        (what differs: their LayerNorm and positional table; their sentence has no </s>, ours one no word reads).
#
# CORPUS (training text; words only, lower-cased, digits -> N, punctuation dropped; 10k vocabulary from it):
#   ptb       ptb_sample/train (3,396 sentences, WSJ 00-01)
#   wsj       ptb + wsj_text/wsj15-18 + wsj20 (14,221; the papers' protocol: no scored sentence is trained on)
#   wsj_all   wsj + wsj22's text (15,921; Wang et al.'s "WSJ-all": the selection set's text is trained on)
#   wsj_brown wsj + brown (71,380: 181 Brown lines without a word dropped, counted; Brown is out of the WSJ domain)
# Validation on wsj22's words: --eval-treebank takes the valid split's place, so the validation loss (and
# SCHEDULE=plateau's steps) are wsj22's too (the authors' code validates on ptb_sample/valid's text, text/valid.txt);
# model selection (checkpoint_best) on wsj22 UF1.
# The papers score WSJ23, which this project does not hold: the rows are wsj22 and ptb_sample/valid.
#
# A run (WORK/CORPUS/ARCH_sSEED) goes on from its checkpoint_last.pt when called again, and stops where one
# uninterrupted --patience run stops (fairseq counts patience afresh after a resume: the stop is read from the
# log, as the Multi30k recipe does). Then fairseq-tree-induce writes induce_{wsj22,ptbvalid}[_joint]/scores.json
# (StructFormer: eq. 17's argmax heads, and Algorithm 3's tree heads as _joint). Last:
#   fairseq-tree-report induction WORK > WORK/results.md   (mean ± sd over seeds)
set -euo pipefail
SHARED=${1:-../shared}
WORK=${2:-work/induction_wsj}
RUNS=${RUNS:-"structformer_small constituent_transformer_small"}
SEEDS=${SEEDS:-"1 2 3"}
CORPUS=${CORPUS:-wsj}
PATIENCE=${PATIENCE:-10}
VALIDATE=${VALIDATE:-1000}
SCHEDULE=${SCHEDULE:-fixed}
case $SCHEDULE/$VALIDATE in  # StructFormer's code variant: its rate schedule
  fixed/*) CODE_SCHEDULE="--lr-scheduler fixed --warmup-updates 0" ;;
  plateau/epoch) CODE_SCHEDULE="--lr-scheduler loss_plateau" ;;
  plateau/*) echo "SCHEDULE=plateau halves the rate at epochs' ends: set VALIDATE=epoch" >&2; exit 2 ;;
  *) echo "SCHEDULE=$SCHEDULE: fixed or plateau" >&2; exit 2 ;;
esac
MAX_UPDATE=${MAX_UPDATE:-200000}
DEVICE=${DEVICE:-cpu}
POLL=${POLL:-30}
EXTRA=${EXTRA:-}
VARIANTS=${VARIANTS:-paper}
export OMP_NUM_THREADS=${THREADS:-1} MKL_NUM_THREADS=${THREADS:-1}
PY=${PYTHON:-python}
export PATH=$(dirname "$(command -v "$PY")"):$PATH  # the active environment's console scripts
REPO=$(cd "$(dirname "$0")/../.." && pwd)
D=$SHARED/data
DEV=(); [ "$DEVICE" = cpu ] && DEV=(--cpu)
[ "$DEVICE" = cuda ] && DEV=(--fp16)

# 1. text and data-bin of the corpus (once)
text() {  # corpus -> its training text, written once (atomic: fairseq-tree-induction-text writes whole files)
  local dir=$WORK/$1 tb=("$D/ptb_sample/train.mrg") txt=()
  case $1 in
    ptb) ;;
    wsj) txt=("$D/wsj_text/wsj15-18.txt" "$D/wsj_text/wsj20.txt") ;;
    wsj_all) txt=("$D/wsj_text/wsj15-18.txt" "$D/wsj_text/wsj20.txt"); tb+=("$D/wsj22/wsj22.mrg") ;;
    wsj_brown) txt=("$D/wsj_text/wsj15-18.txt" "$D/wsj_text/wsj20.txt" "$D/brown/brown.txt") ;;
    *) echo "unknown CORPUS $1 (ptb, wsj, wsj_all, wsj_brown)" >&2; return 2 ;;
  esac
  mkdir -p "$dir/text"
  [ -f "$dir/text/train.txt" ] || fairseq-tree-induction-text --out "$dir/text/train.txt" --treebank "${tb[@]}" \
    ${txt:+--text "${txt[@]}" --tokenize ptb}
  [ -f "$dir/text/valid.txt" ] || fairseq-tree-induction-text --out "$dir/text/valid.txt" \
    --treebank "$D/ptb_sample/valid.mrg"
  [ -f "$dir/data-bin/dict.txt" ] || fairseq-preprocess --only-source --trainpref "$dir/text/train.txt" \
    --validpref "$dir/text/valid.txt" --destdir "$dir/data-bin" --nwordssrc 10000 --workers 1 > "$dir/preprocess.log" 2>&1
}

# 2. train: the settings of train_induction_ptb.sh's CPU rows (RESULTS.md), wsj22 UF1 selects and stops
CODE_MODEL="--sf-calibrate --sf-parser-layernorm --sf-leaky-relu --encoder-learned-pos --attention-dropout 0"
CODE_MODEL+=" --no-scale-embedding --lm-head linear"
CODE_TRAIN="--sf-code-init --embed-init uniform --activation-dropout 0.1 --embed-dropout 0 --sf-calibrate-batch"
CODE_TRAIN+=" --mask-sampling bernoulli"  # their training choices beyond the model (code; not code_model)
CODE_OPT="--adam-betas (0.9,0.999) --adam-eps 1e-9 --lr 1e-3 $CODE_SCHEDULE --clip-norm 0.25"
CODE_OPT+=" --weight-decay 1.2e-6"
PAPER_OPT="--adam-betas (0.9,0.98) --lr 1e-3 --lr-scheduler inverse_sqrt --warmup-updates 400 --clip-norm 1.0"
PAPER_OPT+=" --weight-decay 0.01"
CA_CODE_MODEL="--ca-link-scale 256 --ca-code-diagonal --ca-own-norm --ca-parse-min-layer 2 --ca-parse-code-rule"
CA_CODE_MODEL+=" --ca-bos-in-chain --lm-head untied --embed-init xavier --ca-code-init --mask-prob 0.142857"
CA_CODE_MODEL+=" --mask-sampling bernoulli --mask-bos-unk --unsorted-batches"
CA_CODE_OPT="--adam-betas (0.9,0.98) --adam-eps 1e-9 --lr 1e-4 --lr-scheduler fixed --warmup-updates 0 --clip-norm 1.5"
CA_CODE_OPT+=" --weight-decay 0 --batch-size 64"
flags() {  # arch seed variant -> the flags that make the run what it is (its flags.txt; not the device)
  local model="" opt=$PAPER_OPT batch="--max-tokens 1024" optim=adam
  case $3/$1 in
    code/structformer*) model=" $CODE_MODEL $CODE_TRAIN" opt=$CODE_OPT optim=adam_l2 ;;
    code_model/structformer*) model=" $CODE_MODEL" opt=$CODE_OPT ;;
    code/constituent_transformer*) model=" $CA_CODE_MODEL" opt=$CA_CODE_OPT batch="--max-tokens 8192" ;;
  esac
  echo "$WORK/$CORPUS/data-bin --task tree_induction --arch $1$model --criterion masked_lm --optimizer $optim" \
    "$opt $batch --seed $2 --eval-treebank $D/wsj22/wsj22.mrg" \
    "--eval-deps $D/wsj22/wsj22.sd.conll --best-checkpoint-metric uf1 --maximize-best-checkpoint-metric $EXTRA"
}
run_dir() {  # arch seed variant
  if [ "$3" = paper ]; then echo "$WORK/$CORPUS/$1_s$2"; else echo "$WORK/$CORPUS/$1_$3_s$2"; fi
}
stop_of() {  # run dir -> "EPOCH UPDATES" where one uninterrupted --patience run stops; nothing before that
  [ ! -f "$1/train.log" ] || fairseq-tree-report patience "$1/train.log" --patience "$PATIENCE" --maximize
}
updates_of() { grep -o "num_updates [0-9]*" "$1/train.log" 2>/dev/null | tail -1 | cut -d' ' -f2; }
saved_of() {  # run dir -> the update count of its last saved checkpoint (fairseq's "Saved checkpoint ... @ U updates")
  grep -o "@ [0-9]* updates" "$1/train.log" 2>/dev/null | tail -1 | cut -d' ' -f2 || true
}
TRAIN_PID=
trap '[ -z "$TRAIN_PID" ] || kill "$TRAIN_PID" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
train() {  # arch seed variant
  local dir f
  dir=$(run_dir "$1" "$2" "$3")
  [ -f "$dir/.done" ] && return 0
  mkdir -p "$dir"
  f=$(flags "$1" "$2" "$3")
  same() { sed "s#[^ ]*/data-bin #DATA #"; }  # a work directory moved (a GPU's copy) is the same run
  if [ -f "$dir/flags.txt" ] && [ "$(same < "$dir/flags.txt")" != "$(echo "$f" | same)" ]; then
    printf '%s\n' "$dir: trained with other flags; use another WORK" "  was: $(cat "$dir/flags.txt")" "  now: $f" >&2
    return 2
  fi
  echo "$f" > "$dir/flags.txt"
  if [ -n "$(stop_of "$dir")" ]; then touch "$dir/.done"; return 0; fi
  local upto=$MAX_UPDATE; [ -n "${STOP_AFTER:-}" ] && [ "$STOP_AFTER" -lt "$upto" ] && upto=$STOP_AFTER
  # a slice already saved at its count: fairseq resumed at --max-update would train one update more
  local saved; saved=$(saved_of "$dir")
  if [ "${saved:-0}" -ge "$upto" ]; then
    if [ "${saved:-0}" -ge "$MAX_UPDATE" ]; then touch "$dir/.done"; fi
    return 0
  fi
  echo "== $(date -u +%FT%TZ) start/resume on $DEVICE" >> "$dir/train.log"
  # shellcheck disable=SC2046  # the recorded flags, word-split (none holds a space)
  local val=(--validate-interval 1000000 --validate-interval-updates "$VALIDATE" --save-interval-updates "$VALIDATE"
             --keep-interval-updates 1)
  [ "$VALIDATE" = epoch ] && val=(--validate-interval 1 --save-interval 1)
  fairseq-train --user-dir "$REPO/fairseq_tree" $f "${DEV[@]}" --save-dir "$dir" --max-update "$upto" \
    --patience "$PATIENCE" "${val[@]}" --no-epoch-checkpoints \
    --log-format simple --log-interval 100 >> "$dir/train.log" 2>&1 &
  TRAIN_PID=$!
  local saves=0 n
  while kill -0 "$TRAIN_PID" 2>/dev/null; do
    sleep "$POLL"
    n=$(grep -c "Saved checkpoint" "$dir/train.log" || true)
    [ "$n" = "$saves" ] && continue
    saves=$n  # a validation saved: has the uninterrupted run stopped?
    if [ -n "$(stop_of "$dir")" ]; then kill "$TRAIN_PID" 2>/dev/null || true; fi
  done
  if ! wait "$TRAIN_PID" && [ -z "$(stop_of "$dir")" ]; then
    echo "$dir: fairseq-train failed (see its train.log)" >&2
    TRAIN_PID=; return 1
  fi
  TRAIN_PID=
  if [ -n "$(stop_of "$dir")" ] || [ "$(updates_of "$dir")" -ge "$MAX_UPDATE" ]; then touch "$dir/.done"; fi
}

# 3. induce and score the selected checkpoint on wsj22 and ptb_sample/valid, the baselines beside it
evaluate() {  # arch seed variant
  local dir set tb deps m
  dir=$(run_dir "$1" "$2" "$3")
  [ -f "$dir/.done" ] || return 0
  for set in wsj22 ptbvalid; do
    if [ $set = wsj22 ]; then tb=$D/wsj22/wsj22.mrg; deps=$D/wsj22/wsj22.sd.conll
    else tb=$D/ptb_sample/valid.mrg; deps=$D/ptb_sample/valid.conllu; fi
    for m in distance joint; do
      [ "$m" = joint ] && [ "${1#structformer}" = "$1" ] && continue  # Algorithm 3 is StructFormer's
      local out=$dir/induce_$set; [ "$m" = joint ] && out=${out}_joint
      [ -f "$out/scores.json" ] && continue
      fairseq-tree-induce --path "$dir/checkpoint_best.pt" --treebank "$tb" --deps "$deps" --out "$out" \
        $([ "$m" = joint ] && echo --opt method=joint) > "$out.log" 2>&1 \
        || { echo "$dir: fairseq-tree-induce failed (see $out.log)" >&2; return 1; }
    done
  done
}

text "$CORPUS"
for arch in $RUNS; do
  for variant in $VARIANTS; do
    case $variant/$arch in
      paper/*|code/structformer*|code/constituent_transformer*|code_model/structformer*) ;;
      code/*|code_model/*) echo "== $arch: no $variant variant (code: StructFormer's and constituent attention's;"\
                                "code_model: StructFormer's); skipped" >&2
                           continue ;;
      *) echo "unknown variant $variant (paper, code, code_model)" >&2; exit 2 ;;
    esac
    for seed in $SEEDS; do
      train "$arch" "$seed" "$variant"
      evaluate "$arch" "$seed" "$variant"
    done
  done
done
fairseq-tree-report induction "$WORK" > "$WORK/results.md"
cat "$WORK/results.md"
