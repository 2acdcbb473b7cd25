#!/usr/bin/env bash
# One command per table of the four papers (docs/reproduce.md): the table's recipe with its settings.
#
#   scripts/recipes/papers/reproduce.sh list                   the tables, their recipes and inputs
#   scripts/recipes/papers/reproduce.sh TABLE WORK [PTB_DIR]   run (or, with DRY_RUN=1, print) that table
#
# Every recipe fetches what is public (or reads SOURCE_BASE=URL_OR_DIR), takes the licensed Penn Treebank as
# PTB_DIR, resumes when called again, and ends with the paper's rows beside ours in WORK/results*.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TABLES="nguyen-table1 nguyen_translation.sh (PAIR=iwslt14-de-en|iwslt14-en-de|iwslt13-en-fr|iwslt13-fr-en|wmt14-en-de)
nguyen-table2 nguyen_classification.sh (TASK=sst|imdb|sva)
nguyen-table3 nguyen_translation.sh PAIR=iwslt14-en-de and iwslt13-en-fr, nguyen_classification.sh TASK=sst (ablations)
mrini-table3 mrini_lal.sh PTB_DIR (ROWS=xlnet bert; Table 1: xlnet_l2 xlnet_l2_nopwff xlnet_l2_nopwff_noresdrop)
wang-table1 induction_wsj23.sh PTB_DIR MODEL=wang (TRAIN=02-21|all)
shen-table2 induction_wsj23.sh PTB_DIR MODEL=shen"
TABLE=${1:?usage: reproduce.sh list | TABLE WORK [PTB_DIR]}
if [ "$TABLE" = list ]; then echo "$TABLES"; exit 0; fi
WORK=${2:?usage: reproduce.sh TABLE WORK [PTB_DIR]}
ABLATIONS="transformer tree2seq tree2seq_nohier tree2seq_nosubmask tree2seq_nohier_nosubmask"
case $TABLE in
  nguyen-table1) exec bash "$HERE/nguyen_translation.sh" "$WORK" ;;
  nguyen-table2) exec bash "$HERE/nguyen_classification.sh" "$WORK" ;;
  nguyen-table3)  # the ablation rows of Table 3, beside the full model, on its three tasks
    for pair in iwslt14-en-de iwslt13-en-fr; do
      PAIR=$pair RUNS=${RUNS:-$ABLATIONS} bash "$HERE/nguyen_translation.sh" "$WORK/$pair"
    done
    TASK=sst TASKS=sst5 exec bash "$HERE/nguyen_classification.sh" "$WORK/sst" ;;
  mrini-table3) exec bash "$HERE/mrini_lal.sh" "${3:?mrini-table3: PTB_DIR}" "$WORK" ;;
  wang-table1) MODEL=wang exec bash "$HERE/induction_wsj23.sh" "${3:?wang-table1: PTB_DIR}" "$WORK" ;;
  shen-table2) MODEL=shen exec bash "$HERE/induction_wsj23.sh" "${3:?shen-table2: PTB_DIR}" "$WORK" ;;
  *) echo "unknown table $TABLE; reproduce.sh list names them" >&2; exit 2 ;;
esac
