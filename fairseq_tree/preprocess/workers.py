"""Running a stage's worker over shards here: in this process, or in ``--workers`` forked processes.

A stage's worker (:class:`~fairseq_tree.preprocess.stages.ParseWorker`, ...) holds what one process needs for
every shard it handles (tokenizers, a parser model, BPE tables, dictionaries). ``make_worker`` builds it (e.g.
``functools.partial(ParseWorker, cfg)``); each process builds one, once, as a local variable of its loop
(:func:`_serve`), and calls it on the shards it takes. No state lives in module globals.

Why not ``multiprocessing.Pool``: it pickles a task's function anew for every task, so per-process state has to
live in a module global set by the pool's initializer, and an initializer that raises makes the pool start
replacement workers forever (a parser checkpoint that could not be loaded hung the run). Here every process
takes the next shard number from a shared counter (the next free process takes the next shard, as
``Pool.imap`` with chunks of one) and answers ``(number, error or None)`` on its own pipe; the parent handles
the answers in shard order and raises the error of the first failing shard, as ``imap`` does. A worker that
cannot be built answers its first shard with the reason (``NAME: the worker could not start: ...``); a process
that dies (killed, out of memory) closes its pipe, and the shard it never answered is an error, not a hang.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import signal
from multiprocessing.connection import wait
from typing import Callable, Dict, List, Optional

from fairseq_tree.preprocess.shards import PreprocessError, Shard

#: a stage's worker: one shard -> its meta (written to the shard's ``.json``)
Worker = Callable[[Shard], dict]


def start_worker(name: str, make_worker: Callable[[], Worker]) -> Worker:
    """``make_worker()``; its failure, of any kind, as a PreprocessError naming the stage."""
    try:
        return make_worker()
    except Exception as e:  # noqa: BLE001 (any failure: the message names it)
        raise PreprocessError(f"{name}: the worker could not start: {type(e).__name__}: {e}") from e


def run_local(name: str, make_worker: Callable[[], Worker], todo: List[Shard], workers: int,
              done: Callable[[Shard], None]) -> None:
    """Run the stage on every shard of ``todo``: here with one worker (or one shard), else in
    ``min(workers, len(todo))`` forked processes; ``done(shard)`` in shard order as each one completes."""
    if workers <= 1 or len(todo) == 1:
        worker = start_worker(name, make_worker)
        for s in todo:
            worker(s)
            done(s)
        return
    ctx = mp.get_context("fork")
    counter = ctx.Value("l", 0)
    procs, answers = [], []
    try:
        for _ in range(min(workers, len(todo))):
            reader, writer = ctx.Pipe(duplex=False)  # one per process: its answers, then end of file when it ends
            p = ctx.Process(target=_serve, args=(name, make_worker, todo, counter, writer), daemon=True)
            p.start()
            writer.close()  # the process's copy is the only one left
            procs.append(p)
            answers.append(reader)
        _collect(name, todo, answers, done)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
        for r in answers:
            r.close()


def _serve(name: str, make_worker: Callable[[], Worker], todo: List[Shard], counter, answers) -> None:
    """One worker process: build the worker, then take shard numbers until none is left; answer each."""
    # Ctrl-C reaches the whole process group: the parent stops the run (and these processes), one message
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        worker = start_worker(name, make_worker)
    except PreprocessError as e:
        answers.send((_claim(counter), _portable(e)))
        return
    while True:
        i = _claim(counter)
        if i >= len(todo):
            return
        try:
            worker(todo[i])
            answers.send((i, None))
        except Exception as e:  # noqa: BLE001 (sent to the parent, which raises it)
            answers.send((i, _portable(e)))


def _claim(counter) -> int:
    with counter.get_lock():
        i = counter.value
        counter.value += 1
    return i


def _portable(error: Exception) -> Exception:
    """``error`` if it survives pickling, else a PreprocessError with its message."""
    try:
        return pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001
        return PreprocessError(f"{type(error).__name__}: {error}")


def _collect(name: str, todo: List[Shard], answers: list, done: Callable[[Shard], None]) -> None:
    """Handle the answers in shard order; raise the first error, or when every process has ended without
    answering for a shard (killed, e.g. out of memory)."""
    got: Dict[int, Optional[Exception]] = {}
    open_ = list(answers)
    for i, shard in enumerate(todo):
        while i not in got:
            if not open_:
                raise PreprocessError(f"{name}: the worker processes ended before finishing shard {shard.name}")
            for r in wait(open_):
                try:
                    j, error = r.recv()
                    got[j] = error
                except EOFError:
                    open_.remove(r)
        if got[i] is not None:
            raise got[i]
        done(shard)
