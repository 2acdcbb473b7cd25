"""BPE subtrees (Nguyen et al. 2020, Figure 7): a word cut into k > 1 pieces becomes a node over its pieces."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from fairseq_tree.trees.tree import BPE_SUFFIX, Span, Tree, post_order_key


def expand_subwords(tree: Tree, segment: Callable[[str], Sequence[str]]) -> Tree:
    """Split every word with ``segment`` (e.g. subword-nmt); a word cut into k > 1 pieces becomes a
    node labelled with its POS tag spanning the pieces (each piece keeps the tag)."""
    words: List[str] = []
    tags: List[Optional[str]] = []
    new_index = [0] * (len(tree.words) + 1)  # word start -> piece start
    bpe_nodes: List[Tuple[Span, str]] = []
    for j, (word, tag) in enumerate(zip(tree.words, tree.tags)):
        new_index[j] = len(words)
        pieces = segment(word)
        if not pieces:
            raise ValueError(f"segmenter returned no pieces for word {word!r}")
        if len(pieces) > 1:
            bpe_nodes.append(((len(words), len(words) + len(pieces)), tag or "X"))
        words.extend(pieces)
        tags.extend([tag] * len(pieces))
    new_index[len(tree.words)] = len(words)
    if not bpe_nodes:
        return Tree(words, tags, list(tree.labels), list(tree.spans))
    nodes = [((new_index[s], new_index[e]), lab) for (s, e), lab in zip(tree.spans, tree.labels)]
    nodes.extend(bpe_nodes)
    nodes.sort(key=lambda x: post_order_key(x[0]))
    return Tree(words, tags, [lab for _, lab in nodes], [sp for sp, _ in nodes])


def merge_subwords(tree: Tree, suffix: str = BPE_SUFFIX) -> Tree:
    """Inverse of :func:`expand_subwords` for subword-nmt pieces (``study@@ ing`` -> ``studying``)."""
    words: List[str] = []
    tags: List[Optional[str]] = []
    old_to_new = []
    cur = ""
    for w, t in zip(tree.words, tree.tags):
        old_to_new.append(len(words))
        if w.endswith(suffix):
            cur += w[: -len(suffix)]
            continue
        words.append(cur + w)
        tags.append(t)
        cur = ""
    if cur:
        words.append(cur)
        tags.append(tree.tags[-1])
    old_to_new.append(len(words))
    labels, spans = [], []
    for (s, e), lab in zip(tree.spans, tree.labels):
        ns, ne = old_to_new[s], old_to_new[e - 1] + 1
        if ne - ns >= 2:
            labels.append(lab)
            spans.append((ns, ne))
    return Tree(words, tags, labels, spans)
