"""Running a pipeline pass as jobs of a cluster scheduler, through submitit (fairseq's and hydra's own route to
SLURM): ``--launcher slurm`` submits the pass's shards as one job array, ``--launcher local`` runs the same jobs
as local processes with submitit's local executor (what CI tests).

A job runs a group of shards with the stage's usual worker (:mod:`fairseq_tree.preprocess.stages`), built once
per job, which writes
their outputs under temporary names and a ``.json`` last, into ``DESTDIR/.work`` (which must therefore be on a
file system the jobs share). The driver waits for the array; a failed job is reported with its shards and its
log, and rerunning the same command resubmits only the shards that are not done.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Callable, List, Sequence

from fairseq_tree.preprocess.shards import PreprocessError, Shard

logger = logging.getLogger("fairseq_tree.preprocess")


def add_launcher_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("launcher (run each pass's shards as scheduler jobs)")
    g.add_argument("--launcher", choices=["local", "slurm"], default=None,
                   help="run the parse, bpe and binarize passes as job arrays through submitit: slurm (sbatch, "
                        "DESTDIR must be on a shared file system) or local (submitit's local executor, the same "
                        "jobs as local processes). Default: --workers processes of this command")
    g.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="jobs per pass (each runs a run of consecutive shards; default: --num-shards, or --workers)")
    g.add_argument("--launcher-dir", metavar="DIR",
                   help="submitit's folder (job scripts, logs, pickled results); default DESTDIR/.launcher")
    g.add_argument("--slurm-partition", metavar="NAME")
    g.add_argument("--slurm-account", metavar="NAME")
    g.add_argument("--slurm-time", type=int, default=240, metavar="MIN", help="time limit per job, minutes")
    g.add_argument("--slurm-cpus-per-task", type=int, default=None, metavar="N", help="default: --workers")
    g.add_argument("--slurm-gpus-per-node", type=int, default=0, metavar="N",
                   help="GPUs per job (with --device cuda for the parser backends)")
    g.add_argument("--slurm-mem-gb", type=int, default=None, metavar="GB")
    g.add_argument("--slurm-array-parallelism", type=int, default=256, metavar="N",
                   help="jobs of an array running at once")
    g.add_argument("--slurm-setup", action="append", default=[], metavar="CMD",
                   help="a shell line run before each job (e.g. 'source venv/bin/activate'); repeatable")


def slurm_parameters(args) -> dict:
    """The sbatch parameters of ``--slurm-*`` (submitit's ``SlurmExecutor.update_parameters`` names)."""
    params = {"time": args.slurm_time, "cpus_per_task": args.slurm_cpus_per_task or args.workers,
              "array_parallelism": args.slurm_array_parallelism, "job_name": "fairseq-tree-preprocess",
              "setup": list(args.slurm_setup)}
    optional = {"partition": args.slurm_partition, "account": args.slurm_account,
                "gpus_per_node": args.slurm_gpus_per_node or None,
                "mem": f"{args.slurm_mem_gb}GB" if args.slurm_mem_gb else None}
    params.update({k: v for k, v in optional.items() if v is not None})
    return params


def make_executor(args, folder: str):
    """A submitit executor for ``args.launcher`` whose jobs log into ``folder``."""
    import submitit

    if args.launcher == "local":
        executor = submitit.LocalExecutor(folder=folder)
        executor.update_parameters(timeout_min=args.slurm_time)
        return executor
    try:
        executor = submitit.SlurmExecutor(folder=folder)
    except RuntimeError as e:  # no srun/sbatch on this machine
        raise PreprocessError(f"--launcher slurm: {e} (--launcher local runs the same jobs here)") from None
    executor.update_parameters(**slurm_parameters(args))
    return executor


def balanced_groups(shards: Sequence[Shard], n: int) -> List[List[Shard]]:
    """``shards`` cut into at most ``n`` runs of consecutive shards with about equal line counts."""
    n = max(1, min(n, len(shards)))
    total = sum(s.num_lines for s in shards)
    groups: List[List[Shard]] = [[] for _ in range(n)]
    done = 0
    for s in shards:
        groups[min(n - 1, done * n // max(total, 1))].append(s)
        done += s.num_lines
    return [g for g in groups if g]


def run_group(make_worker: Callable, shards: List[Shard]) -> List[str]:
    """One job: the stage's worker built once (``make_worker()``), then called on each shard (each writes its own
    outputs)."""
    worker = make_worker()
    for s in shards:
        worker(s)
    return [s.name for s in shards]


def run_stage_jobs(executor, name: str, todo: List[Shard], make_worker: Callable, jobs: int,
                   progress: Callable[[Shard], None]) -> None:
    """Run ``todo`` as one job array of ``jobs`` jobs and wait; raise PreprocessError naming every failed job's
    shards and log once all jobs have ended (the completed shards are kept for the rerun)."""
    from submitit.helpers import as_completed

    groups = balanced_groups(todo, jobs)
    with executor.batch():
        submitted = [executor.submit(run_group, make_worker, g) for g in groups]
    logger.info("%s: submitted %d jobs (%s) for %d shards", name, len(submitted),
                ", ".join(sorted({str(j.job_id).split("_")[0] for j in submitted})), len(todo))
    by_job = {id(j): g for j, g in zip(submitted, groups)}
    failures = []
    for job in as_completed(submitted, poll_frequency=1):
        group = by_job[id(job)]
        try:
            job.result()
        except Exception as e:  # noqa: BLE001 -- a failed job of any kind is reported, the others still finish
            failures.append(_failure(job, group, e))
            continue
        for s in group:
            progress(s)
    if failures:
        raise PreprocessError(f"{name}: {len(failures)} of {len(groups)} jobs failed; rerun the same command to "
                              "retry them (completed shards are kept):\n" + "\n".join(failures))


def _failure(job, group: List[Shard], error: Exception) -> str:
    # submitit's FailedJobError holds the job's traceback between two dashed lines: its last line is the error
    parts = str(error).split("----------------------")
    trace = (parts[1] if len(parts) >= 3 else str(error)).strip().splitlines()
    reason = trace[-1].split("PreprocessError: ", 1)[-1] if trace else type(error).__name__
    log = job.paths.stderr
    return (f"  job {job.job_id}: shards {group[0].name}..{group[-1].name}: {reason} "
            f"(log: {log if os.path.exists(log) else job.paths.folder})")
