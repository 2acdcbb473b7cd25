"""Length-sorted batching: the one helper every batched runner uses (parser, inducer, classifier, the
preprocessing parser backends). Batches are lists of indices into the input; :func:`restore_order` puts
per-batch results back in input order. Pure Python: no torch import."""

from typing import Iterable, List, Optional, Sequence, TypeVar

T = TypeVar("T")


def length_batches(lengths: Sequence[int], batch_size: int, sort: bool = True,
                   max_tokens: Optional[int] = None) -> List[List[int]]:
    """Indices into ``lengths`` in batches of at most ``batch_size`` items and, with ``max_tokens``, at most
    ``max_tokens`` padded positions (batch size x its longest length; a single item longer than that is still
    a batch of its own). By increasing length when ``sort`` (stable: equal lengths keep their input order),
    else in input order. Every index appears exactly once."""
    if batch_size < 1:
        raise ValueError(f"batch size must be positive, got {batch_size}")
    order = sorted(range(len(lengths)), key=lengths.__getitem__) if sort else list(range(len(lengths)))
    batches: List[List[int]] = []
    batch: List[int] = []
    longest = 0
    for i in order:
        padded = (len(batch) + 1) * max(longest, lengths[i])
        if batch and (len(batch) >= batch_size or (max_tokens is not None and padded > max_tokens)):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, lengths[i])
    if batch:
        batches.append(batch)
    return batches


def restore_order(batches: Sequence[Sequence[int]], results: Iterable[Sequence[T]]) -> List[T]:
    """Per-batch results (``results[b][j]`` belongs to index ``batches[b][j]``) -> one list in input order
    (length: the number of indices in ``batches``)."""
    out: List[Optional[T]] = [None] * sum(len(b) for b in batches)
    for batch, res in zip(batches, results):
        if len(res) != len(batch):
            raise ValueError(f"{len(res)} results for a batch of {len(batch)}")
        for i, r in zip(batch, res):
            out[i] = r
    return out  # type: ignore[return-value]


__all__ = ["length_batches", "restore_order"]
