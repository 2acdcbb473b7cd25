# The common steps of the paper recipes (scripts/recipes/papers/*.sh, scripts/recipes/train_sst.sh): sourced, never
# run. A recipe is a list of steps; each step is done once (WORK/.steps/NAME.done) so that the same command,
# called again after an interruption, goes on from the first step not done; a training step goes on from its
# checkpoint_last.pt (fairseq-train's own resume) and refuses to go on with other flags.
#
#   DRY_RUN=1   print each step, its expected disk and GPU-hours and its commands; run and write nothing
#   STOP_AFTER=STEP   stop once that step is done (a data-only run: STOP_AFTER=binarize)
#   DEVICE=cuda|cpu   where training runs (cuda: --fp16); PYTHON=python  the environment with fairseq-tree
#
# The data steps are scripts/recipes/papers/papers.py's subcommands; everything else is a fairseq or fairseq-tree
# console script.
set -euo pipefail
PAPERS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$PAPERS/../../.." && pwd)
PY=${PYTHON:-python}
export PATH=$(dirname "$(command -v "$PY" || echo /usr/bin/python)"):$PATH  # its console scripts
export OMP_NUM_THREADS=${THREADS:-${OMP_NUM_THREADS:-1}} MKL_NUM_THREADS=${THREADS:-${MKL_NUM_THREADS:-1}}
DRY_RUN=${DRY_RUN:-0}
STOP_AFTER=${STOP_AFTER:-}
DEVICE=${DEVICE:-cuda}
USER_DIR=$REPO/fairseq_tree
dev_flags() {  # fairseq-train's device flags: half precision on the GPU (structure stays fp32), --cpu on a CPU
  if [ "$DEVICE" = cpu ]; then echo --cpu; else echo --fp16; fi
}
dry() { [ "$DRY_RUN" = 1 ]; }

# sized_for GPU PAPER_BUDGET: the header of a recipe (what it was sized for; its numbers are estimates)
sized_for() {
  echo "# $RECIPE: sized for $1; the paper's budget: $2."
  echo "# GPU-hours and disk below are estimates for that GPU, not measurements: these recipes were not run at"
  echo "# full scale in this repository (docs/reproduce.md)."
}

# step NAME DISK GPU_HOURS WHAT: begin a step -> 0 to run it, 1 when it is done already (or, with DRY_RUN, 0 after
# printing its header: the commands that follow print themselves)
step() {
  STEP=$1
  if dry; then printf '\n## step %s: %s (disk ~%s, ~%s GPU-hours)\n' "$1" "$4" "$2" "$3"; return 0; fi
  if [ -f "$WORK/.steps/$1.done" ]; then echo "== step $1: done before (WORK/.steps/$1.done)"; return 1; fi
  echo "== $(date -u +%FT%TZ) step $1: $4"
}
# done_step: mark the current step done; stop here when STOP_AFTER names it
done_step() {
  dry && return 0
  mkdir -p "$WORK/.steps" && touch "$WORK/.steps/$STEP.done"
  if [ "$STOP_AFTER" = "$STEP" ]; then echo "== stopped after step $STEP (STOP_AFTER)"; exit 0; fi
}

# show CMD...: the command as one shell line (words quoted only where the shell needs it)
show() {
  local w out=""
  for w in "$@"; do
    if [[ $w =~ ^[][A-Za-z0-9_./:=,+@%^~-]+$ ]]; then out+=" $w"
    elif [[ $w != *"'"* ]]; then out+=" '$w'"
    else out+=" $(printf '%q' "$w")"; fi
  done
  echo "${out# }"
}
# x CMD...: run it, or print it with DRY_RUN
x() { if dry; then echo "  \$ $(show "$@")"; else "$@"; fi; }
# x_log LOG CMD...: run it with stdout and stderr appended to LOG (a resumed run keeps its history)
x_log() {
  local log=$1; shift
  if dry; then echo "  \$ $(show "$@") >> $log 2>&1"; return 0; fi
  mkdir -p "$(dirname "$log")"
  "$@" >> "$log" 2>&1 || { echo "$(show "$@"): failed, see $log" >&2; return 1; }
}
# x_out OUT CMD...: run it with stdout to OUT (written whole: a .tmp renamed) and stderr to OUT.log
x_out() {
  local out=$1; shift
  if dry; then echo "  \$ $(show "$@") > $out"; return 0; fi
  mkdir -p "$(dirname "$out")"
  "$@" > "$out.tmp" 2> "$out.log" || { echo "$(show "$@"): failed, see $out.log" >&2; return 1; }
  mv "$out.tmp" "$out"
}
helper() { x "$PY" "$PAPERS/papers.py" "$@"; }

# fetch URL_OR_PATH DEST: a source archive, once (a local path or file:// URL for data already on disk)
fetch() { helper fetch "$1" "$2"; }

# train DIR FLAGS...: fairseq-train into DIR, resumed from DIR/checkpoint_last.pt when called again; DIR/flags.txt
# records the flags (the device's aside) and a run with other flags stops with both; DIR/.done once it ended
train() {
  local dir=$1; shift
  local f; f=$(show "$@")
  if dry; then x_log "$dir/train.log" fairseq-train "$@" $(dev_flags) --save-dir "$dir"; return 0; fi
  [ -f "$dir/.done" ] && return 0
  mkdir -p "$dir"
  if [ -f "$dir/flags.txt" ] && [ "$(cat "$dir/flags.txt")" != "$f" ]; then
    printf '%s\n' "$dir: trained with other flags; use another WORK" "  was: $(cat "$dir/flags.txt")" "  now: $f" >&2
    return 2
  fi
  echo "$f" > "$dir/flags.txt"
  echo "== $(date -u +%FT%TZ) start/resume on $DEVICE" >> "$dir/train.log"
  x_log "$dir/train.log" fairseq-train "$@" $(dev_flags) --save-dir "$dir"
  touch "$dir/.done"
}
