"""Shims that let fairseq-fixed 0.12.3 run on torch >= 2.6 and numpy 2, applied when the plugin loads.

* torch >= 2.6 loads with ``weights_only=True`` unless told otherwise, and fairseq checkpoints pickle
  an ``argparse.Namespace``/``DictConfig``, so ``fairseq-generate``, ``fairseq-interactive`` and a
  resumed ``fairseq-train`` fail. torch reads ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` at each call and it
  only applies where the caller did not pass ``weights_only`` (fairseq's calls); callers that ask for
  ``weights_only=True`` explicitly (stanza) keep it. As before torch 2.6, only load trusted checkpoints.
* numpy 2 removed ``np.compat``; fairseq still uses ``np.compat.long`` in ``TokenBlockDataset``
  (``--sample-break-mode eos``) and ``LanguagePairDataset(num_buckets > 0)``.
* fairseq's ``BufferedIterator`` prefetches batches in a daemon thread. When training stops in the
  middle of an epoch (``--max-update``), the main thread exits while that thread is still inside
  torch, and the process aborts at interpreter shutdown ("terminate called without an active
  exception", exit 134) after everything was saved. An ``atexit`` hook stops and joins those threads
  first; the thread's loop gains a stop check, nothing else changes.
* fairseq's ``data_utils.batch_by_size`` (its Cython ``batch_by_size_vec``) silently drops the sentences left
  over when the last batch is smaller than ``--required-batch-size-multiple`` (default 8): 300 sentences of
  ``fairseq-generate`` give 296 hypotheses, validations score up to 7 sentences fewer, and training never sees
  the longest sentences of an epoch. The wrapper batches the leftovers (``required_batch_size_multiple=1``,
  same token and sentence limits) into final batches; the other batches are fairseq's, unchanged.
"""

import atexit
import os
import queue
import threading
import types
import warnings


def apply() -> None:
    os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    warnings.filterwarnings("ignore", message="Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")

    import numpy as np

    try:
        np.compat.long  # noqa: B018
    except AttributeError:
        np.compat = types.SimpleNamespace(long=np.int64)

    _stop_prefetch_threads_at_exit()
    _keep_leftover_sentences_in_batches()


def _keep_leftover_sentences_in_batches() -> None:
    from fairseq.data import data_utils

    batch_by_size = data_utils.batch_by_size
    if getattr(batch_by_size, "_fairseq_tree_keeps_all", False):
        return

    def keep_all(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None, max_sentences=None,
                 required_batch_size_multiple=1, fixed_shapes=None):
        import numpy as np

        batches = batch_by_size(indices, num_tokens_fn, num_tokens_vec, max_tokens, max_sentences,
                                required_batch_size_multiple, fixed_shapes)
        if fixed_shapes is not None or sum(len(b) for b in batches) == len(indices):
            return batches
        indices = np.asarray(indices, dtype=np.int64)
        seen = np.concatenate(batches) if len(batches) else np.zeros(0, dtype=np.int64)
        rest = indices[~np.isin(indices, seen)]  # in the caller's (length) order
        rest_vec = None if num_tokens_vec is None else np.asarray(num_tokens_vec)[~np.isin(indices, seen)]
        return list(batches) + list(batch_by_size(rest, num_tokens_fn, rest_vec, max_tokens, max_sentences, 1))

    keep_all._fairseq_tree_keeps_all = True
    data_utils.batch_by_size = keep_all


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
