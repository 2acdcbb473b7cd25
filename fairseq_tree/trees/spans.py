"""Span views of a tree: unlabeled span sets, node heights, syntactic distances (both directions)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from fairseq_tree.trees.tree import Span, Tree, node_parents


def unlabeled_spans(tree_or_spans, n: Optional[int] = None, include_root: bool = True,
                    min_length: int = 2) -> set:
    """The set of half-open ``(start, end)`` node spans; optionally without the whole-sentence span."""
    if isinstance(tree_or_spans, Tree):
        spans, n = tree_or_spans.spans, len(tree_or_spans.words)
    else:
        spans = tree_or_spans
    out = {sp for sp in spans if sp[1] - sp[0] >= min_length}
    if not include_root and n is not None:
        out.discard((0, n))
    return out


def node_heights(spans: Sequence[Span]) -> List[int]:
    """Height of each node (a node over only leaves has height 1). Shape [m]."""
    heights = [1] * len(spans)
    for i, p in enumerate(node_parents(spans)):
        if p >= 0:
            heights[p] = max(heights[p], heights[i] + 1)  # children come first in post-order
    return heights


def tree_to_distances(spans: Sequence[Span], n: int) -> List[int]:
    """Syntactic distances (Shen et al.): for each split point i (between leaves i and i+1), the height
    of the lowest common ancestor of leaves i and i+1. Length n-1."""
    heights = node_heights(spans)
    dist: List[Optional[int]] = [None] * max(n - 1, 0)
    for (s, e), h in zip(spans, heights):  # post-order: lower nodes claim their split points first
        for i in range(s, e - 1):
            if dist[i] is None:
                dist[i] = h
    if any(d is None for d in dist):
        raise ValueError("spans do not cover every split point (is the root missing?)")
    return dist  # type: ignore[return-value]


def distances_to_tree(distances: Sequence[float]) -> List[Span]:
    """StructFormer's Algorithm 1: split at the largest distance (leftmost on ties), recursively.
    Returns the binary tree's spans in post-order (n - 1 nodes for n = len(distances) + 1 leaves)."""
    n = len(distances) + 1
    spans: List[Span] = []
    # iterative post-order: (start, end, expanded?)
    stack = [(0, n, False)]
    while stack:
        s, e, expanded = stack.pop()
        if e - s < 2:
            continue
        if expanded:
            spans.append((s, e))
            continue
        k = max(range(s, e - 1), key=lambda i: (distances[i], -i))  # split after leaf k
        stack.append((s, e, True))
        stack.append((k + 1, e, False))
        stack.append((s, k + 1, False))
    return spans
