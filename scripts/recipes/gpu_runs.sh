#!/usr/bin/env bash
# Multi30k anchor rows (scripts/recipes/multi30k_anchor.sh) trained in a GPU lease that returns no work directory:
# `bundle` copies what the lease's runs need into the bundle (scripts/recipes/gpu_checks.sh, phase `runs`, trains
# them there and sends each run back as RUN_sSEED.tgz.part-*); `unpack` puts those runs back into the work
# directory, where the recipe's same command goes on from them (or finds them finished).
#
#   scripts/recipes/gpu_runs.sh bundle WORK_DIR BUNDLE [SHARED=../shared]
#       WORK's data-bins, text/*/.done (the data is built: the lease reads no raw text), the log, flags and
#       checkpoint_last.pt of each unfinished run of ANCHOR_RUNS x ANCHOR_SEEDS (the lease goes on from them; the
#       lease's defaults: tree2seq_lal, 2 3), and multi30k's test references (sacreBLEU)
#   scripts/recipes/gpu_runs.sh unpack FILES_DIR WORK_DIR [TGT=de]
#       each run's parts joined and unpacked into WORK/ckpt/TGT/RUN_sSEED; an unfinished run's last saved epoch
#       checkpoint (resume.pt) becomes its checkpoint_last.pt
set -euo pipefail
case ${1:-} in
  bundle)
    WORK=${2:?WORK_DIR}; BUNDLE=${3:?BUNDLE}; SHARED=${4:-$(cd "$(dirname "$0")/../.." && pwd)/../shared}
    A=$BUNDLE/anchor_work; rm -rf "$A" "$BUNDLE/m30k"; mkdir -p "$A" "$BUNDLE/m30k"
    cp -r "$WORK/data-bin" "$A/"
    for t in "$WORK"/text/*/; do mkdir -p "$A/text/$(basename "$t")" && touch "$A/text/$(basename "$t")/.done"; done
    shopt -s nullglob
    for r in ${ANCHOR_RUNS:-tree2seq_lal}; do for s in ${ANCHOR_SEEDS:-2 3}; do
      for d in "$WORK"/ckpt/*/"${r}_s$s"/; do
        [ -f "$d/.done" ] && continue
        o=$A/ckpt/$(basename "$(dirname "$d")")/${r}_s$s; mkdir -p "$o"
        for f in train.log flags.txt checkpoint_last.pt; do [ -f "$d/$f" ] && cp "$d/$f" "$o/"; done
      done
    done; done
    cp "$SHARED"/data/multi30k/test.?? "$BUNDLE/m30k/"
    du -sh "$A" ;;
  unpack)
    FILES=${2:?FILES_DIR}; WORK=${3:?WORK_DIR}; TGT=${4:-de}
    shopt -s nullglob
    parts=("$FILES"/*.tgz.part-aa)
    [ ${#parts[@]} -gt 0 ] || { echo "$FILES: no RUN_sSEED.tgz.part-aa" >&2; exit 2; }
    for first in "${parts[@]}"; do
      name=$(basename "$first" .tgz.part-aa); dir=$WORK/ckpt/$TGT/$name
      mkdir -p "$dir"
      cat "$FILES/$name".tgz.part-* | tar xzf - -C "$dir"
      [ ! -f "$dir/resume.pt" ] || mv "$dir/resume.pt" "$dir/checkpoint_last.pt"
      echo "$dir: $(grep -o 'num_updates=[0-9]*' "$dir/train.log" | tail -1)$([ -f "$dir/.done" ] && echo ', done' || true)"
    done ;;
  *) echo "usage: $0 bundle WORK_DIR BUNDLE [SHARED] | unpack FILES_DIR WORK_DIR [TGT]" >&2; exit 2 ;;
esac
