#!/usr/bin/env bash
# Mrini et al. 2020, "Rethinking self-attention": the LAL parser on the Penn Treebank with a pretrained encoder
# (--pretrained-encoder: XLNet-large-cased, the paper's Table 3; BERT-large-cased beside it) and the joint
# dependency scores (UAS / LAS without punctuation) beside EVALB F1 on WSJ23; Table 1's ablations as rows.
#
#   scripts/recipes/papers/mrini_lal.sh PTB_DIR WORK
#   PTB_DIR: the licensed treebank, in the layout of the authors' data/ folder (the HPSG parser's): 02-21.10way.clean,
#            22.auto.clean, 23.auto.clean (one tree per line; 22 and 23 with the Stanford tagger's predicted POS), and
#            ptb_{train,dev,test}_3.3.0.sd.clean (Stanford basic dependencies 3.3.0, CoNLL-X)
#   env: ROWS="xlnet bert" (+ xlnet_l2 xlnet_l2_nopwff xlnet_l2_nopwff_noresdrop: Table 1) SEEDS="1"
#        XLNET=xlnet-large-cased BERT=bert-large-cased (hub names or save_pretrained folders; needs the
#        [pretrained] extra), ARCH=lal_parser, MAX_EPOCH=100, BATCH_SIZE=100, UPDATE_FREQ=1, EXTRA,
#        and lib.sh's DRY_RUN, STOP_AFTER, DEVICE
#
# Writes WORK/data-bin, WORK/ROW_sSEED/{train.log,flags.txt,checkpoint_best.pt}, WORK/ROW_sSEED/test.{trees,conllu},
# WORK/ROW_sSEED/scores_test.json (F1, UAS, LAS of WSJ23), WORK/results.md.
RECIPE="Mrini et al. 2020 Tables 1 and 3 (LAL parser, PTB)"
. "$(dirname "$0")/lib.sh"
PTB=${1:?usage: mrini_lal.sh PTB_DIR WORK}
WORK=${2:?usage: mrini_lal.sh PTB_DIR WORK}
dry || { mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd); }
ROWS=${ROWS:-"xlnet bert"}
SEEDS=${SEEDS:-1}
ARCH=${ARCH:-lal_parser}
sized_for "one NVIDIA H100 80GB, fp16" "100 epochs of batches of 100 sentences with XLNet-large fine-tuned, on one
# 32 GB GPU (Section 4.1): ~13 GPU-hours a row here (estimated from XLNet-large's size; BERT-large ~10)"
TRAIN=02-21.10way.clean; DEV=22.auto.clean; TEST=23.auto.clean
TRAIN_DEP=ptb_train_3.3.0.sd.clean; DEV_DEP=ptb_dev_3.3.0.sd.clean; TEST_DEP=ptb_test_3.3.0.sd.clean
if ! dry; then
  for f in $TRAIN $DEV $TEST $TRAIN_DEP $DEV_DEP $TEST_DEP; do
    [ -f "$PTB/$f" ] || { echo "$PTB/$f: missing (PTB_DIR: the authors' data/ layout, see the header)" >&2; exit 2; }
  done
fi

if step data "1 GB" 0 "binarize the treebank and its dependencies (words, tags, spans, heads)"; then
  x fairseq-tree-parsing-data --destdir "$WORK/data-bin" --train "$PTB/$TRAIN" --train-dep "$PTB/$TRAIN_DEP" \
    --valid "$PTB/$DEV" --valid-dep "$PTB/$DEV_DEP" --test "$PTB/$TEST" --test-dep "$PTB/$TEST_DEP"
  done_step
fi

row_flags() {  # row -> the model's flags (the authors' best script: feed-forward kept, no residual dropout)
  case $1 in
    xlnet) echo "--pretrained-encoder ${XLNET:-xlnet-large-cased} --lal-no-residual-dropout" ;;
    bert) echo "--pretrained-encoder ${BERT:-bert-large-cased} --lal-no-residual-dropout" ;;
    xlnet_l2) echo "--pretrained-encoder ${XLNET:-xlnet-large-cased} --encoder-layers 2" ;;
    xlnet_l2_nopwff) echo "--pretrained-encoder ${XLNET:-xlnet-large-cased} --encoder-layers 2 --lal-no-pwff" ;;
    xlnet_l2_nopwff_noresdrop) echo "--pretrained-encoder ${XLNET:-xlnet-large-cased} --encoder-layers 2" \
      "--lal-no-pwff --lal-no-residual-dropout" ;;
    *) echo "unknown row $1 (xlnet, bert, xlnet_l2, xlnet_l2_nopwff, xlnet_l2_nopwff_noresdrop)" >&2; return 2 ;;
  esac
}
for seed in $SEEDS; do
  for row in $ROWS; do
    dir=$WORK/${row}_s$seed
    f=$(row_flags "$row")
    gpu=13; [ "$row" = bert ] && gpu=10
    if step "train-${row}_s$seed" "10 GB" "$gpu" "train the LAL parser, $row, seed $seed"; then
      # shellcheck disable=SC2086  # the row's flags, word-split
      train "$dir" "$WORK/data-bin" --user-dir "$USER_DIR" --task constituency_parsing \
        --criterion span_hinge_dependency --arch "$ARCH" $f --pretrained-replace-words --pretrained-pooling last \
        --optimizer adam --adam-betas '(0.9, 0.98)' --adam-eps 1e-9 --lr 5e-5 --lr-scheduler reduce_lr_on_plateau \
        --lr-shrink 0.5 --lr-patience 5 --warmup-updates 160 --warmup-init-lr 0 --batch-size "${BATCH_SIZE:-100}" \
        --update-freq "${UPDATE_FREQ:-1}" --max-epoch "${MAX_EPOCH:-100}" --best-checkpoint-metric f1 \
        --maximize-best-checkpoint-metric --no-epoch-checkpoints --seed "$seed" --log-format simple \
        --log-interval 100 ${EXTRA:-}
      done_step
    fi
    if step "test-${row}_s$seed" "0.1 GB" 0.1 "parse WSJ23: EVALB F1, UAS and LAS (punctuation excluded)"; then
      x_out "$dir/scores_test.json" fairseq-tree-parse --path "$dir/checkpoint_best.pt" --input "$PTB/$TEST" \
        --gold "$PTB/$TEST" --gold-dep "$PTB/$TEST_DEP" --output "$dir/test" --device "$DEVICE"
      done_step
    fi
  done
done
x_out "$WORK/results.md" "$PY" "$PAPERS/papers.py" table mrini-table3 "$WORK"
dry || cat "$WORK/results.md"
