"""Span views of a tree: unlabeled span sets, node heights, syntactic distances (both directions)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from fairseq_tree.trees.tree import Span, Tree, node_heights, tree_to_distances  # noqa: F401  (re-exported)


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
