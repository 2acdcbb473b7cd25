#!/usr/bin/env bash
# Nguyen et al. 2020 (ICLR), "Tree-structured attention with hierarchical accumulation": Table 1 (IWSLT'14 En-De /
# De-En, IWSLT'13 En-Fr / Fr-En, WMT'14 En-De base) and Table 3's ablations, for one language pair: tree2seq beside
# fairseq's Transformer on the same sentences, BPE, dictionary, updates and batch size, with the paper's settings
# (Appendix 7.4), scored by tokenized BLEU as the paper (fairseq's BLEU4 on the Moses-tokenized text, BPE removed)
# and sacreBLEU beside it; the paper's row printed beside ours.
#
#   scripts/recipes/papers/nguyen_translation.sh WORK
#   env: PAIR=iwslt14-de-en | iwslt14-en-de | iwslt13-en-fr | iwslt13-fr-en | wmt14-en-de
#        RUNS="transformer tree2seq"  (Table 3: + tree2seq_nohier tree2seq_nosubmask tree2seq_nohier_nosubmask)
#        SEEDS="1"
#        PARSER=stanza | given | trivial
#          stanza:  stanza's constituency parser of the source language (en: ptb3-revised, de: spmrl), downloaded
#                   (--stanza-download) unless STANZA_MODEL_DIR=DIR names one; the paper used Stanford CoreNLP 3.9.1
#          given:   TREES_DIR=DIR holds {train,valid,test}.SRC.trees, one bracketed tree per line of
#                   WORK/tok/{split}.SRC (run STOP_AFTER=tokenize first, parse those files with the parser you
#                   want: CoreNLP as the paper, or a French parser for Fr-En, which stanza lacks)
#          trivial: right-branching trees over the words (a no-syntax control; the tests' parser)
#        LOWERCASE=1 for IWSLT'14 (fairseq's prepare-iwslt14.sh lowercases; trees parsed cased), else 0
#        SOURCE_BASE=URL_OR_DIR  where the archives are (their file names kept): a mirror, or files already on disk
#        UPDATES, MAX_TOKENS, UPDATE_FREQ, AVERAGE (the last N checkpoints, SAVE_INTERVAL=1000 updates apart),
#        BPE_MERGES, ARCH_SEQ / ARCH_TREE, WORKERS=4, EXTRA (more fairseq-train flags), GEN_EXTRA (more
#        fairseq-generate flags), EVAL_SPLITS="valid test"
#        and lib.sh's DRY_RUN=1, STOP_AFTER=STEP, DEVICE=cuda|cpu
#
# Writes WORK/orig (archives), WORK/raw (text), WORK/tok (tokenized, cleaned), WORK/trees, WORK/data-bin/{tree,seq},
# WORK/ckpt/RUN_sSEED/{train.log,flags.txt,checkpoint_avgN.pt,{valid,test}.gen,result.json}, WORK/results.md.
RECIPE="Nguyen et al. 2020 Table 1 / Table 3 (translation)"
. "$(dirname "$0")/lib.sh"
WORK=${1:?usage: nguyen_translation.sh WORK (env PAIR=...)}
dry || { mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd); }
PAIR=${PAIR:-iwslt14-de-en}
RUNS=${RUNS:-"transformer tree2seq"}
SEEDS=${SEEDS:-1}
PARSER=${PARSER:-stanza}
WORKERS=${WORKERS:-4}
EVAL_SPLITS=${EVAL_SPLITS:-"valid test"}
SRC=${PAIR#*-}; SRC=${SRC%-*}; TGT=${PAIR##*-}

case $PAIR in
  iwslt14-de-en|iwslt14-en-de)
    BASE=http://dl.fbaipublicfiles.com/fairseq/data/iwslt14; FILES=(de-en.tgz)
    EXTRACT=(iwslt --pair de-en --meta 2014 --valid from-train
             --test TED.dev2010,TEDX.dev2012,TED.tst2010,TED.tst2011,TED.tst2012)
    LOWERCASE=${LOWERCASE:-1}; MAX_LEN=175; LENPEN=1.0; VALID_EVERY=23 ;;
  iwslt13-en-fr|iwslt13-fr-en)
    BASE=https://wit3.fbk.eu/archive/2015-01/texts/en/fr; FILES=(en-fr.tgz)
    EXTRACT=(iwslt --pair en-fr --valid TED.tst2012 --test TED.tst2013)
    LOWERCASE=${LOWERCASE:-0}; MAX_LEN=175; LENPEN=0.7; VALID_EVERY=0 ;;
  wmt14-en-de)
    BASE=""; FILES=(training-parallel-europarl-v7.tgz training-parallel-commoncrawl.tgz training-parallel-nc-v12.tgz
                    test-full.tgz)
    URLS=(http://statmt.org/wmt13/training-parallel-europarl-v7.tgz
          http://statmt.org/wmt13/training-parallel-commoncrawl.tgz
          http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz
          http://statmt.org/wmt14/test-full.tgz)
    EXTRACT=(wmt); LOWERCASE=${LOWERCASE:-0}; MAX_LEN=250; LENPEN=0.6; VALID_EVERY=100 ;;
  *) echo "unknown PAIR $PAIR (iwslt14-de-en, iwslt14-en-de, iwslt13-en-fr, iwslt13-fr-en, wmt14-en-de)" >&2; exit 2 ;;
esac
if [ "${PAIR%%-*}" = wmt14 ]; then  # base models (Appendix 7.4): 32K tokens (one GPU: 4,096 x 8), 200K updates
  ARCH_SEQ=${ARCH_SEQ:-transformer_wmt_en_de}; ARCH_TREE=${ARCH_TREE:-tree2seq_wmt_en_de}
  LR=7e-4; DROPOUT=0.1; UPDATES=${UPDATES:-200000}; UPDATE_FREQ=${UPDATE_FREQ:-8}; AVERAGE=${AVERAGE:-5}
  GPU_PARSE=3; GPU_SEQ=20; GPU_TREE=34; GPU_EVAL=0.3; DISK_ORIG="5 GB"; DISK_TEXT="4 GB"; DISK_BIN="3 GB"
  DISK_RUN="6 GB"
  sized_for "one NVIDIA H100 80GB, fp16" "200K updates of 32K tokens per model, on 8 GPUs in Ott et al. 2018;
# here 4,096 tokens x --update-freq 8 on one GPU: ~20 GPU-hours (Transformer) + ~34 (tree2seq) + ~3 (stanza)"
else  # IWSLT: d 512, ffn 1024, 4K tokens, 60K updates, lr 5e-4, dropout 0.3 (Appendix 7.4)
  ARCH_SEQ=${ARCH_SEQ:-transformer_iwslt_de_en}; ARCH_TREE=${ARCH_TREE:-tree2seq_iwslt_de_en}
  LR=5e-4; DROPOUT=0.3; UPDATES=${UPDATES:-60000}; UPDATE_FREQ=${UPDATE_FREQ:-1}; AVERAGE=${AVERAGE:-10}
  GPU_PARSE=0.2; GPU_SEQ=1.5; GPU_TREE=2.6; GPU_EVAL=0.1; DISK_ORIG="0.1 GB"; DISK_TEXT="0.2 GB"
  DISK_BIN="0.1 GB"; DISK_RUN="6 GB"
  sized_for "one NVIDIA H100 80GB, fp16" "60K updates of 4K tokens per model (Appendix 7.4): ~1.5 GPU-hours
# (Transformer) + ~2.6 (tree2seq, 1.7x its step time: RESULTS.md) per seed and row"
fi
MAX_TOKENS=${MAX_TOKENS:-4096}
SAVE_INTERVAL=${SAVE_INTERVAL:-1000}  # a checkpoint every N updates, the last AVERAGE of them averaged
if [ $((UPDATES % SAVE_INTERVAL)) != 0 ]; then
  echo "UPDATES=$UPDATES is not a multiple of SAVE_INTERVAL=$SAVE_INTERVAL: the last update would not be averaged" >&2
  exit 2
fi
BPE_MERGES=${BPE_MERGES:-32000}
if [ "$PARSER" = stanza ] && [ "$SRC" = fr ]; then
  echo "PARSER=stanza: stanza has no French constituency parser. Parse WORK/tok/{train,valid,test}.fr with" \
    "Stanford CoreNLP's French model (the paper's CoreNLP 3.9.1) or benepar_fr2, then PARSER=given TREES_DIR=DIR" >&2
  exit 2
fi

# 1. the archives, as fairseq's examples/translation/prepare-*.sh fetch them (SOURCE_BASE: a mirror or a folder)
if step fetch "$DISK_ORIG" 0 "download the $PAIR archives"; then
  for i in "${!FILES[@]}"; do
    url=${BASE:+$BASE/${FILES[$i]}}; url=${url:-${URLS[$i]:-}}
    [ -n "${SOURCE_BASE:-}" ] && url=$SOURCE_BASE/${FILES[$i]}
    fetch "$url" "$WORK/orig/${FILES[$i]}"
  done
  done_step
fi
# 2. unpack, and the corpus as fairseq's prepare script cuts it (train / valid / test, one sentence a line, raw)
if step extract "$DISK_TEXT" 0 "unpack; raw train / valid / test text"; then
  for f in "${FILES[@]}"; do helper extract "$WORK/orig/$f" "$WORK/orig/unpacked"; done
  helper "${EXTRACT[0]}" "$WORK/orig/unpacked" "$WORK/raw" --src "$SRC" --tgt "$TGT" "${EXTRACT[@]:1}"
  done_step
fi
# 3. sacremoses, as fairseq-tree-preprocess --tokenize moses (source in PTB conventions); training pairs cleaned as
#    clean-corpus-n (1..MAX_LEN tokens, ratio 1.5), each dropped pair counted in WORK/tok/tokenize.json; IWSLT'14
#    and WMT: every 23rd / 100th cleaned training pair held out for validation, as fairseq's prepare scripts
if step tokenize "$DISK_TEXT" 0 "tokenize both sides, clean the training pairs"; then
  helper tokenize "$WORK/raw" "$WORK/tok" --src "$SRC" --tgt "$TGT" --max-len "$MAX_LEN" \
    --valid-every "$VALID_EVERY"
  done_step
fi
# 4. source trees, one per line of WORK/tok/{split}.SRC (WORK/parser.txt: a rerun with another PARSER stops)
case $PARSER in
  stanza) TREES=$WORK/parse ;;
  given) TREES=${TREES_DIR:-} ;;
  trivial) TREES=$WORK/trees ;;
  *) echo "unknown PARSER $PARSER (stanza, given, trivial)" >&2; exit 2 ;;
esac
if ! dry && [ -f "$WORK/parser.txt" ] && [ "$(cat "$WORK/parser.txt")" != "$PARSER $TREES" ]; then
  echo "$WORK: parsed with $(cat "$WORK/parser.txt"), not $PARSER $TREES; use another WORK" >&2; exit 2
fi
if step parse "$DISK_TEXT" "$GPU_PARSE" "parse the source ($PARSER)"; then
  case $PARSER in
    stanza)
      STANZA=(--stanza-download); [ -n "${STANZA_MODEL_DIR:-}" ] && STANZA=(--stanza-model-dir "$STANZA_MODEL_DIR")
      x fairseq-tree-preprocess --only-source -s "$SRC" --trainpref "$WORK/tok/train" --validpref "$WORK/tok/valid" \
        --testpref "$WORK/tok/test" --tokenize none --parser stanza --stanza-lang "$SRC" "${STANZA[@]}" \
        --device "${PARSE_DEVICE:-$DEVICE}" --workers "$WORKERS" --destdir "$TREES" ;;
    given) [ -n "$TREES" ] || { echo "PARSER=given: TREES_DIR=DIR with {train,valid,test}.$SRC.trees" >&2; exit 2; }
      x ls "$TREES/train.$SRC.trees" "$TREES/valid.$SRC.trees" "$TREES/test.$SRC.trees" ;;
    trivial) helper trivial-trees "$WORK/tok" "$TREES" --src "$SRC" ;;
  esac
  dry || echo "$PARSER $TREES" > "$WORK/parser.txt"
  done_step
fi
TOK=$WORK/tok
if [ "$LOWERCASE" = 1 ]; then
  if step lowercase "$DISK_TEXT" 0 "lowercase the text and the tree leaves (parsed cased)"; then
    helper lowercase "$TOK" "$TREES" "$WORK/tok_lc" "$WORK/trees_lc" --src "$SRC" --tgt "$TGT"
    done_step
  fi
  TOK=$WORK/tok_lc; TREES=$WORK/trees_lc
fi
# 5. BPE (a word's pieces under one node with its POS tag), binarize; the Transformer's data-bin made from it
if step binarize "$DISK_BIN" 0 "joint BPE ($BPE_MERGES merges), binarize; the Transformer's data-bin"; then
  x fairseq-tree-preprocess -s "$SRC" -t "$TGT" --trainpref "$TOK/train" --validpref "$TOK/valid" \
    --testpref "$TOK/test" --tokenize none --parser given --trees-dir "$TREES" --bpe-merges "$BPE_MERGES" --joined-dictionary \
    --workers "$WORKERS" --on-error fail --destdir "$WORK/data-bin/tree"
  helper seq-databin "$WORK/data-bin/tree" "$WORK/data-bin/seq" --src "$SRC" --tgt "$TGT"
  done_step
fi

# 6. train: the paper's settings, the same for both models; only the task, the architecture and the trees differ
OPTIM=(--optimizer adam --adam-betas '(0.9,0.98)' --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates 4000
  --warmup-init-lr 1e-07 --weight-decay 1e-4 --dropout "$DROPOUT" --criterion label_smoothed_cross_entropy
  --label-smoothing 0.1 --max-tokens "$MAX_TOKENS" --update-freq "$UPDATE_FREQ" --max-update "$UPDATES"
  --save-interval-updates "$SAVE_INTERVAL" --keep-interval-updates "$AVERAGE" --no-epoch-checkpoints
  --log-format simple --log-interval 100 -s "$SRC" -t "$TGT")
run_flags() {  # run seed -> fairseq-train's flags
  case $1 in
    transformer) echo "$WORK/data-bin/seq --task translation --arch $ARCH_SEQ" ;;
    tree2seq) echo "$WORK/data-bin/tree --task tree_translation --arch $ARCH_TREE --tree-batch-by leaves" ;;
    tree2seq_nohier) echo "$WORK/data-bin/tree --task tree_translation --arch $ARCH_TREE --tree-batch-by leaves" \
      "--no-hierarchical-embeddings" ;;
    tree2seq_nosubmask) echo "$WORK/data-bin/tree --task tree_translation --arch $ARCH_TREE --tree-batch-by leaves" \
      "--no-subtree-mask" ;;
    tree2seq_nohier_nosubmask) echo "$WORK/data-bin/tree --task tree_translation --arch $ARCH_TREE" \
      "--tree-batch-by leaves --no-hierarchical-embeddings --no-subtree-mask" ;;
    *) echo "unknown run $1 (transformer, tree2seq, tree2seq_nohier, tree2seq_nosubmask, tree2seq_nohier_nosubmask)" >&2
       return 2 ;;
  esac
}
evaluate() {  # run seed: the last AVERAGE checkpoints averaged, beam 5, the pair's length penalty; both BLEUs
  local dir=$WORK/ckpt/$1_s$2 data=$WORK/data-bin/tree task=tree_translation split base=()
  [ "$1" = transformer ] && { data=$WORK/data-bin/seq; task=translation; }
  x fairseq-tree-average --inputs "$dir" --num-update-checkpoints "$AVERAGE" --output "$dir/checkpoint_avg$AVERAGE.pt"
  for split in $EVAL_SPLITS; do
    x_out "$dir/$split.gen" fairseq-generate "$data" --user-dir "$USER_DIR" --task $task -s "$SRC" -t "$TGT" \
      --path "$dir/checkpoint_avg$AVERAGE.pt" --gen-subset "$split" --beam 5 --lenpen "$LENPEN" --remove-bpe \
      --batch-size 64 $([ "$DEVICE" = cpu ] && echo --cpu) ${GEN_EXTRA:-}
  done
  [ "$1" != transformer ] && base=(--baseline "$WORK/ckpt/transformer_s$2")
  [ -f "$WORK/ckpt/transformer_s$2/test.gen" ] || dry || base=()
  x_out "$dir/result.json" fairseq-tree-report translation "$dir" --reference "$TOK/test.raw.$TGT" --lang "$TGT" \
    $([ "$LOWERCASE" = 1 ] && echo --lowercase) "${base[@]}"
}
for seed in $SEEDS; do
  for run in $RUNS; do
    gpu=$GPU_TREE; [ "$run" = transformer ] && gpu=$GPU_SEQ
    f=$(run_flags "$run" "$seed")
    if step "train-${run}_s$seed" "$DISK_RUN" "$gpu" "train $run, seed $seed"; then
      # shellcheck disable=SC2086  # the run's flags, word-split (none holds a space)
      train "$WORK/ckpt/${run}_s$seed" $f --user-dir "$USER_DIR" --share-all-embeddings "${OPTIM[@]}" --seed "$seed" \
        ${EXTRA:-}
      done_step
    fi
    if step "eval-${run}_s$seed" "0.1 GB" "$GPU_EVAL" "average, beam search, tokenized BLEU and sacreBLEU"; then
      evaluate "$run" "$seed"
      done_step
    fi
  done
done
# 7. the paper's row beside ours
x_out "$WORK/results.md" "$PY" "$PAPERS/papers.py" table nguyen-table1 "$WORK" --row "$PAIR"
dry || cat "$WORK/results.md"
