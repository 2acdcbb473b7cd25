#!/usr/bin/env bash
# Data-parallel fairseq-train on CPU: NPROC processes on this machine, gloo, fairseq's legacy_ddp.
#   scripts/recipes/train_distributed_cpu.sh NPROC DATA --user-dir fairseq_tree --task tree_translation ...
# On CPU, fairseq's defaults assume CUDA (device counts, pytorch_ddp device_ids), so each rank is started
# here with an explicit rank, --distributed-no-spawn and --ddp-backend legacy_ddp. On GPU machines use plain
# fairseq-train (it spawns one process per GPU); for several nodes use torchrun or SLURM as fairseq documents.
# Add --check-replica-sync N (tree tasks) to assert every N updates that all ranks hold identical weights.
set -euo pipefail
NPROC=${1:?usage: $0 NPROC fairseq-train-args...}
shift
PORT=${MASTER_PORT:-$((20000 + RANDOM % 20000))}
TRAIN=${FAIRSEQ_TRAIN:-fairseq-train}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
pids=()
for ((rank = 0; rank < NPROC; rank++)); do
  "$TRAIN" "$@" --cpu --distributed-backend gloo --distributed-init-method "tcp://127.0.0.1:$PORT" \
    --distributed-world-size "$NPROC" --distributed-rank "$rank" --distributed-no-spawn \
    --ddp-backend legacy_ddp &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
