#!/usr/bin/env bash
# The GPU checks of a short lease (../shared/notes/gpu_checklist.md), offline, each phase under one deadline, a
# log per phase in OUTDIR. Needs the bundle of scripts/recipes/gpu_bundle.sh in BUNDLE (default .gpu) and a CUDA
# torch as python3. Seen on an H200 (torch 2.11, 2026-11-26): install 50 s, an eager bench row 25-30 s, the
# CUDA tests over 170 s (the tiny models of every family are trained first), parse throughput 30 s.
#
#   bash scripts/recipes/gpu_checks.sh OUTDIR
#   env: BUDGET=560 (s, all phases)  PHASES="install kernels bench graphs tests compiled parse anchor"  BUNDLE=.gpu
#        phase `graphs` (issue 51): --tree-compile-backend cudagraphs, its CUDA parity tests, then fp16 / bf16 bench
#        rows at 8,192 tokens (GRAPH_ROWS="fp16:8192 bf16:8192"): the traced layer stacks replayed as CUDA graphs;
#        with the bundle's tree_bin (gpu_bundle.sh TREE_BIN=), training throughput at the Multi30k size, --fp16,
#        eager and CUDA graphs (train_throughput.sh, one pass each, GRAPH_UPDATES=100)
#        phase `induction` (not in the default list): issue 49's paper-size rows trained on the card, below;
#        IND_RUNS="structformer constituent_transformer" IND_VARIANT=code IND_VALIDATE=500 (updates) IND_WORK=/tmp
#        IND_MAX_UPDATE=200000 (a run that ends by itself before the deadline is also scored: induce_wsj22/)
#        SHARED=../shared (the data: wsj_text, wsj22, ptb_sample)
#        phase `runs` (not in the default list): issue 30's rows trained on the card, below; ANCHOR_RUNS=tree2seq_lal
#        ANCHOR_SEEDS="2 3" WORKERS=2 PACK_SECS=40 (s kept for packing) RUNS_DEVICE=cuda (cpu: the test's)
#        ROWS="fp16:8192 bf16:8192 fp16:4096 bf16:4096" (bench rows: autocast dtype : target tokens)
#        KERNELS="eager fused" (tree2seq's --tree-kernels, each bench row once per value; fused needs the triton that
#        CUDA torch wheels bring: env.txt says which; phase `kernels` first runs the fused kernels' parity tests
#        compiled on the card, and their first compilation)
set -u
OUTDIR=${1:?OUTDIR}; mkdir -p "$OUTDIR"
REPO=$(cd "$(dirname "$0")/../.." && pwd); cd "$REPO"
export PYTHONUNBUFFERED=1 PYTHONPATH=$REPO  # the plugin also where its editable install fails
BUNDLE=${BUNDLE:-.gpu}; BUDGET=${BUDGET:-560}; PHASES=${PHASES:-install kernels bench graphs tests compiled parse anchor}
ROWS=${ROWS:-fp16:8192 bf16:8192 fp16:4096 bf16:4096}; KERNELS=${KERNELS:-eager fused}
T0=$(date +%s); PY=python3
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
lim() {  # lim SECS cmd...: run under min(SECS, time left - 5), say how it ended
  local s=$1; shift; local l; l=$(( $(left) - 5 )); [ "$l" -lt "$s" ] && s=$l
  if [ "$s" -le 10 ]; then echo "SKIPPED (no time): $*"; return 0; fi
  echo "### $(date -u +%T) [limit ${s}s] $*"; local t; t=$(date +%s)
  timeout "$s" "$@"; local rc=$?; echo "### rc=$rc in $(( $(date +%s) - t ))s"
}
has() { [[ " $PHASES " == *" $1 "* ]]; }
until_deadline() {  # PID...: wait for these process groups (setsid) to end; stop them PACK_SECS before
  # the deadline
  local p alive
  until [ "$(left)" -le "${PACK_SECS:-40}" ]; do
    alive=0; for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done; [ $alive = 0 ] && break; sleep 5
  done
  for p in "$@"; do kill -- -"$p" 2>/dev/null; done; sleep 2
}
quiet() { grep -v -e "^DEBUG:" -e "UserWarning: Support for mismatched" -e "key_padding_mask = _canonical_mask"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $PY -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  $PY -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -1
  nproc; } > "$OUTDIR/env.txt" 2>&1
if has install; then
  { $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$BUNDLE"/whl/*.whl
    (cd "$BUNDLE/fairseq_src" && env -u CUDA_HOME $PY -m pip install -q --no-deps --no-build-isolation --no-cache-dir .)
    $PY -m pip install -q --no-deps --no-build-isolation --no-cache-dir -e .
    [ -d ../shared/data ] || { mkdir -p ../shared && cp -r "$BUNDLE/shared/data" ../shared/; }
    $PY -c "import fairseq, fairseq_tree, fairseq.data.data_utils_fast; print('fairseq', fairseq.__version__)"
    echo "install: $(( $(date +%s) - T0 )) s"; } > "$OUTDIR/install.log" 2>&1
fi
if has kernels; then  # --tree-kernels fused compiled on the card: parity with eager (fp32 1e-5, fp16/bf16), launches
  lim 120 $PY -m pytest -q -p no:cacheprovider -n 0 -rA tests/unit/test_tree_kernels.py 2>&1 | quiet \
    > "$OUTDIR/kernels.log"
fi
B=(scripts/benchmarks/bench_tree2seq.py --device cuda --trees ptb --steps 15 --no-decode)
if has bench; then  # eager and fused alternate row by row (each row its own tree2seq / tf / pm alternation)
  for row in $ROWS; do for k in $KERNELS; do
    lim 90 $PY "${B[@]}" --lengths 32,128 --amp "${row%:*}" --tokens "${row#*:}" --tree-kernels "$k" --phases
  done; done 2>&1 | quiet > "$OUTDIR/bench.log"
fi
if has graphs; then  # the layer stacks traced (no inductor) and replayed as CUDA graphs: right first, then timed;
  # torch logs each recording (one per distinct set of sizes): their count ends the log
  { export TORCH_LOGS=cudagraphs
    lim 120 $PY -m pytest -q -p no:cacheprovider -n 0 -rA tests/integration/test_cuda.py -k "cudagraphs or cuda_graphs"
    for row in ${GRAPH_ROWS:-fp16:8192 bf16:8192}; do
      lim 150 $PY "${B[@]}" --lengths 32,128 --amp "${row%:*}" --tokens "${row#*:}" --tree-compile \
        --tree-compile-backend cudagraphs --phases
    done
    if [ -d "$BUNDLE/tree_bin" ]; then
      for extra in "" "--tree-compile --tree-compile-backend cudagraphs"; do
        echo "== train_throughput: tree2seq ${extra:-eager} against the transformer, --fp16"
        PASSES=1 EXTRA=--fp16 TREE_EXTRA="$extra" lim 150 scripts/recipes/train_throughput.sh "$BUNDLE/tree_bin" \
          "${GRAPH_UPDATES:-100}" cuda
      done
    fi; } 2>&1 | quiet > "$OUTDIR/graphs.log"
  echo "cudagraph recordings: $(grep -c "Recording cudagraph tree" "$OUTDIR/graphs.log")" >> "$OUTDIR/graphs.log"
fi
if has tests; then
  lim 300 $PY -m pytest -q -p no:cacheprovider -n 6 --dist load -rA tests/integration/test_cuda.py \
    tests/integration/test_parse_batching.py -k cuda 2>&1 | quiet > "$OUTDIR/tests.log"
fi
if has compiled; then
  for amp in fp16 bf16; do lim 200 $PY "${B[@]}" --lengths 64 --amp $amp --tokens 8192 --tree-compile; done 2>&1 \
    | quiet > "$OUTDIR/bench_compiled.log"
fi
if has parse; then
  lim 60 $PY scripts/benchmarks/bench_parse_backends.py --device cuda --backends lal,induced --corpus ptb \
    --sentences 1000 2>&1 | quiet > "$OUTDIR/parse.log"
fi
if has anchor && [ -d "$BUNDLE/anchor_bin" ]; then
  {  # Multi30k anchor (issue 30): the recipe's transformer row, its updates/s alone, then six runs at once
    for s in 1 2 3 4 5 6; do mkdir -p /tmp/aw$s/data-bin /tmp/aw$s/text/en-de; touch /tmp/aw$s/text/en-de/.done
      rm -rf /tmp/aw$s/data-bin/en-de; cp -r "$BUNDLE/anchor_bin" /tmp/aw$s/data-bin/en-de; touch /tmp/aw$s/data-bin/en-de/.done; done
    for_secs() {  # SECS SEED...: the runs, stopped (whole process groups) after SECS
      local secs=$1; shift; local pids=()
      for s in "$@"; do rm -rf /tmp/aw$s/ckpt; RUNS=transformer SEEDS=$s DEVICE=cuda setsid \
        scripts/recipes/multi30k_anchor.sh /tmp/aw$s > /tmp/aw$s.log 2>&1 & pids+=($!); done
      sleep "$secs"; for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null; done; sleep 1
      echo "== seeds $* for ${secs}s"
      for s in "$@"; do grep train_inner /tmp/aw$s/ckpt/de/transformer_s$s/train.log | tail -1; done
    }
    solo=$(( ($(left) - 10) / 3 )); [ $solo -gt 45 ] && solo=45
    if [ $solo -gt 15 ]; then for_secs $solo 1; for_secs $(( $(left) - 10 )) 1 2 3 4 5 6; fi
  } > "$OUTDIR/anchor_probe.log" 2>&1
fi
if has induction; then
  # Tree induction at the papers' sizes (issue 49, gpu_checklist item 2): each of IND_RUNS trained by the recipe's
  # own command (scripts/recipes/induction_wsj.sh, CORPUS=wsj, IND_VARIANT, seed 1) on the card, all at once, until
  # PACK_SECS before the deadline; each run's train.log comes back as induction_ARCH.log (a wsj22 validation every
  # IND_VALIDATE updates: UF1 / UAS against updates). A paper-size checkpoint with its Adam state (~370 MB) is over
  # what a lease returns (64 MiB): every lease trains from update 0, and its log says how far the curve got.
  pids=(); IND_RUNS=${IND_RUNS:-structformer constituent_transformer}
  for r in $IND_RUNS; do
    W=${IND_WORK:-/tmp}/induction_$r; rm -rf "$W"
    RUNS=$r SEEDS=1 VARIANTS=${IND_VARIANT:-code} CORPUS=wsj DEVICE=${RUNS_DEVICE:-cuda} VALIDATE=${IND_VALIDATE:-500} \
      MAX_UPDATE=${IND_MAX_UPDATE:-200000} POLL=5 PYTHON=$PY setsid scripts/recipes/induction_wsj.sh \
      "${SHARED:-../shared}" "$W" > "$W.out" 2>&1 &
    pids+=($!)
  done
  until_deadline "${pids[@]}"
  { logs=(); for r in $IND_RUNS; do
      W=${IND_WORK:-/tmp}/induction_$r; log=$(ls "$W"/wsj/"$r"*_s1/train.log 2>/dev/null | head -1)
      if [ -z "$log" ]; then echo "== $r: no train.log"; tail -n 5 "$W.out"; continue; fi
      cp "$log" "$OUTDIR/induction_$r.log"; logs+=("$OUTDIR/induction_$r.log")
      echo "== $r: updates=$(grep -oE 'num_updates[= ][0-9]+' "$log" | tail -1 | tr -dc 0-9)"
    done
    [ ${#logs[@]} -gt 0 ] && $PY -m fairseq_tree.cli.report curves "${logs[@]}" --metric uf1
    mapfile -t deps < <(grep -l "| uas " "${logs[@]}" 2>/dev/null)  # StructFormer's logs
    [ ${#deps[@]} -gt 0 ] && $PY -m fairseq_tree.cli.report curves "${deps[@]}" --metric uas
  } > "$OUTDIR/induction.log" 2>&1
fi
if has runs && [ -d "$BUNDLE/anchor_work" ]; then
  # Multi30k anchor rows (issue 30) trained on the card until the deadline, all at once, each the recipe's
  # resumable command (scripts/recipes/multi30k_anchor.sh DEVICE=cuda) on a copy of a work directory that
  # gpu_bundle.sh put in the bundle (ANCHOR_WORK: its data-bins, and run folders to go on from). A lease returns at
  # most 8 files of 16 MiB, 64 MiB in all: each run's folder that fits comes back as RUN_sSEED.tgz.part-aa, -ab,
  # ... (its log, flags and last checkpoint, or its results when it finished; the first runs first);
  # scripts/recipes/gpu_runs.sh unpack puts them back.
  W=/tmp/anchor_work; rm -rf "$W"; cp -r "$BUNDLE/anchor_work" "$W"
  ANCHOR_RUNS=${ANCHOR_RUNS:-tree2seq_lal} ANCHOR_SEEDS=${ANCHOR_SEEDS:-2 3}
  { pids=()
    for r in $ANCHOR_RUNS; do for s in $ANCHOR_SEEDS; do
      RUNS=$r SEEDS=$s DEVICE=${RUNS_DEVICE:-cuda} WORKERS=${WORKERS:-2} POLL=5 M30K="$BUNDLE/m30k" LAL_MODEL=none setsid \
        scripts/recipes/multi30k_anchor.sh "$W" > "/tmp/run_${r}_s$s.log" 2>&1 & pids+=($!)
    done; done
    until_deadline "${pids[@]}"
    for r in $ANCHOR_RUNS; do for s in $ANCHOR_SEEDS; do
      n=${r}_s$s; d=$(echo "$W"/ckpt/*/"$n"); [ -d "$d" ] || continue; files=(train.log flags.txt)
      # the last epoch checkpoint whose save the log records (written whole: fairseq renames it into place, and
      # checkpoint_last.pt is a copy)
      echo "== $n: $(grep -o 'num_updates=[0-9]*' "$d/train.log" | tail -1)"; tail -n 3 "/tmp/run_$n.log"
      if [ -f "$d/result.json" ]; then
        for f in .done result.json valid.gen test.gen; do [ -f "$d/$f" ] && files+=("$f"); done
      else
        last=$(grep -o "Saved checkpoint [^ ]*/checkpoint[0-9]*\.pt" "$d/train.log" | tail -1 | sed 's#.*/##')
        [ -n "$last" ] && cp "$d/$last" "$d/resume.pt" && files+=(resume.pt) && echo "$n: resumes from $last"
      fi
      # a lease returns at most 8 files and 64 MiB: a run whose parts do not all fit stays out whole (a tree2seq
      # run's checkpoint is 41 MB: one a lease; a transformer's 31 MB)
      tar czf "/tmp/$n.tgz" -C "$d" "${files[@]}"
      size=$(stat -c %s "/tmp/$n.tgz"); nparts=$(( (size + 16773119) / 16773120 ))
      used=$(du -cb "$OUTDIR" | tail -1 | cut -f1); nfiles=$(find "$OUTDIR" -type f | wc -l)
      if [ $(( used + size + 262144 )) -le 67108864 ] && [ $(( nfiles + nparts )) -le 8 ]; then
        split -b 16380K "/tmp/$n.tgz" "$OUTDIR/$n.tgz.part-"
      else
        echo "$n: NOT SENT BACK ($size bytes in $nparts parts beyond the lease's 8 files and 64 MiB)"
      fi
    done; done
    ls -l "$OUTDIR"
  } > "$OUTDIR/runs.log" 2>&1
fi
echo "done in $(( $(date +%s) - T0 )) s; logs in $OUTDIR"
