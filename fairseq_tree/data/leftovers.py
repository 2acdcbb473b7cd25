"""Batches that keep every sentence. fairseq main's (and fairseq-fixed 0.12.3.1's) ``data_utils.batch_by_size``
silently drops the sentences left over when the last batch is smaller than ``--required-batch-size-multiple``
(default 8; the Python wrapper cuts the tail the Cython ``batch_by_size_vec`` returns; the 0.12.2 release keeps it,
and there this is a no-op): 300 sentences of ``fairseq-generate`` give 296 hypotheses, validations score up to 7
sentences fewer, and training never sees the longest sentences of an epoch. Here the leftovers are batched
(``required_batch_size_multiple=1``, same token and sentence limits) into final batches; the other batches are
fairseq's, unchanged.

Scope: the plugin's tasks (:class:`~fairseq_tree.tasks.leftovers.KeepsLeftoverSentences`), and fairseq's own tasks
only when the user sets ``FAIRSEQ_TREE_KEEP_LEFTOVERS=1`` (:func:`patch_fairseq_batch_by_size`): ``--user-dir``
alone leaves a baseline's batches as stock fairseq makes them.
"""

from typing import Callable, List

import numpy as np

ENV = "FAIRSEQ_TREE_KEEP_LEFTOVERS"


def with_leftovers(batches: List[np.ndarray], indices, batch_rest: Callable) -> List[np.ndarray]:
    """-> ``batches`` followed by ``batch_rest(rest, keep)`` over the indices no batch holds (in the caller's
    order; ``keep`` [len(indices)] bool marks them), or ``batches`` as they are when none is missing."""
    if sum(len(b) for b in batches) == len(indices):
        return batches
    indices = np.asarray(indices, dtype=np.int64)
    seen = np.concatenate(batches) if len(batches) else np.zeros(0, dtype=np.int64)
    keep = ~np.isin(indices, seen)
    return list(batches) + list(batch_rest(indices[keep], keep))


def keep_leftover_sentences(dataset) -> None:
    """Give this dataset (only) a ``batch_by_size`` that batches the leftovers too; idempotent."""
    original = dataset.batch_by_size
    if getattr(original, "_fairseq_tree_keeps_all", False):
        return

    def batch_by_size(indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        batches = original(indices, max_tokens, max_sentences, required_batch_size_multiple)
        if dataset.get_batch_shapes() is not None:
            return batches
        return with_leftovers(batches, indices, lambda rest, _: original(rest, max_tokens, max_sentences, 1))

    batch_by_size._fairseq_tree_keeps_all = True
    dataset.batch_by_size = batch_by_size


def patch_fairseq_batch_by_size() -> None:
    """Opt-in (``FAIRSEQ_TREE_KEEP_LEFTOVERS=1``): the same for every task of the process, fairseq's included,
    by wrapping ``fairseq.data.data_utils.batch_by_size``."""
    from fairseq.data import data_utils

    batch_by_size = data_utils.batch_by_size
    if getattr(batch_by_size, "_fairseq_tree_keeps_all", False):
        return

    def keep_all(indices, num_tokens_fn, num_tokens_vec=None, max_tokens=None, max_sentences=None,
                 required_batch_size_multiple=1, fixed_shapes=None):
        batches = batch_by_size(indices, num_tokens_fn, num_tokens_vec, max_tokens, max_sentences,
                                required_batch_size_multiple, fixed_shapes)
        if fixed_shapes is not None:
            return batches
        return with_leftovers(batches, indices, lambda rest, keep: batch_by_size(
            rest, num_tokens_fn, None if num_tokens_vec is None else np.asarray(num_tokens_vec)[keep],
            max_tokens, max_sentences, 1))

    keep_all._fairseq_tree_keeps_all = True
    data_utils.batch_by_size = keep_all


__all__ = ["ENV", "keep_leftover_sentences", "patch_fairseq_batch_by_size", "with_leftovers"]
