"""Everything importing the plugin changes outside its own modules, in one place (applied once, when fairseq
loads the plugin through ``--user-dir`` or ``import fairseq_tree``). Nothing here weakens torch or fairseq:

1. **Checkpoint allowlist** (:func:`fairseq_tree.safe_loading.register`): ``argparse.Namespace`` and numpy's scalar
   reconstruction are added to torch's safe globals, so that fairseq's own ``torch.load`` (torch >= 2.6 default:
   ``weights_only=True``) reads fairseq checkpoints; a file that pickles anything else is still refused.
2. **A clearer refusal** (:func:`fairseq_tree.safe_loading.guard_fairseq_loader`): fairseq's
   ``checkpoint_utils.load_checkpoint_to_cpu`` reports a refused file by its path and the opt-out for a trusted
   file (``FAIRSEQ_TREE_TRUSTED_CHECKPOINTS``, read by a copy of the loader for that call only); what it loads and
   how is unchanged.
3. **numpy 2**: ``np.compat`` is gone; fairseq still uses ``np.compat.long`` in ``TokenBlockDataset``
   (``--sample-break-mode eos``) and ``LanguagePairDataset(num_buckets > 0)``: the alias is restored when missing.
4. **Exit hook**: fairseq's ``BufferedIterator`` prefetches batches in a daemon thread. When training stops in the
   middle of an epoch (``--max-update``), the main thread exits while that thread is still inside torch, and the
   process aborts at interpreter shutdown ("terminate called without an active exception", exit 134) after
   everything was saved. An ``atexit`` hook stops and joins those threads first; the thread's loop gains a stop
   check, nothing else changes.
5. **One log line of fairseq's**: fairseq's text_to_speech tasks ask for tensorboardX at import ("Please install
   tensorboardX"), which fairseq-tree never uses; ``fairseq_tree/__init__.py`` filters that one message of those two
   loggers (nothing else of fairseq's logging changes).

Not global: the batching fix that keeps the sentences fairseq main's ``--required-batch-size-multiple`` drops (the
0.12.2 release keeps them) applies to
the plugin's tasks (:mod:`fairseq_tree.data.leftovers`); to fairseq's own tasks only with
``FAIRSEQ_TREE_KEEP_LEFTOVERS=1``.
"""

import atexit
import os
import queue
import threading
import types
import warnings

from fairseq_tree import safe_loading
from fairseq_tree.data import leftovers


def apply() -> None:
    import torch

    if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 6):
        warnings.warn(f"fairseq-tree: torch {torch.__version__} loads checkpoints with full pickle by default "
                      "in fairseq's own CLIs; use torch >= 2.6 for safe loading everywhere",
                      stacklevel=2)
    safe_loading.register()
    safe_loading.guard_fairseq_loader()

    import numpy as np

    try:
        np.compat.long  # noqa: B018
    except AttributeError:
        np.compat = types.SimpleNamespace(long=np.int64)

    _stop_prefetch_threads_at_exit()
    if os.environ.get(leftovers.ENV) == "1":
        leftovers.patch_fairseq_batch_by_size()


def _stop_prefetch_threads_at_exit() -> None:
    from fairseq.data import iterators

    consumer = iterators.BackgroundConsumer
    if getattr(consumer, "_fairseq_tree_stoppable", False):
        return

    def run(self):
        if self.cuda_device is not None:
            import torch

            torch.cuda.set_device(self.cuda_device)
        try:
            for item in self._source:
                if getattr(self, "_fairseq_tree_stop", False):
                    return
                self._queue.put(item)
                self.count += 1
                if self._max_len is not None and self.count >= self._max_len:
                    break
            self._queue.put(iterators._sentinel)
        except Exception as e:
            self._queue.put(e)

    consumer.run = run
    consumer._fairseq_tree_stoppable = True
    atexit.register(_join_prefetch_threads)


def _join_prefetch_threads(timeout: float = 60.0) -> None:
    from fairseq.data.iterators import BackgroundConsumer

    for t in threading.enumerate():
        if not isinstance(t, BackgroundConsumer) or not t.is_alive():
            continue
        t._fairseq_tree_stop = True  # not `_stop`: Thread has a private _stop() method
        waited = 0.0
        while t.is_alive() and waited < timeout:
            try:  # a full queue blocks the thread in put(): drain it
                while True:
                    t._queue.get_nowait()
            except queue.Empty:
                pass
            t.join(0.05)
            waited += 0.05
