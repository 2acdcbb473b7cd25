"""Class-labelled trees (Stanford Sentiment Treebank format): every node, preterminals included, carries a
class name; read into a canonical :class:`~fairseq_tree.trees.tree.Tree` whose labels and tags are classes."""

from __future__ import annotations

from typing import List

from fairseq_tree.trees.brackets import RawTree, canonicalize, parse_brackets, plain_word
from fairseq_tree.trees.tree import Tree, TreeFormatError

#: the class of a leaf that carries none (the words of an SST token split at a non-breaking space)
NO_CLASS = "_"


def _leaf_words(node: RawTree) -> List[str]:
    out: List[str] = []
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            out.append(x)
        else:
            stack.extend(reversed(x[1:]))
    return out


def _check_class(node: RawTree, classes) -> str:
    """The node's label if it is a class; else :class:`TreeFormatError` naming the node by its words."""
    label = node[0]
    if label in classes:
        return label
    words = _leaf_words(node)
    what = f"the node over {' '.join(words[:6])!r}{' ...' if len(words) > 6 else ''}"
    names = list(classes)
    allowed = ", ".join(names) if len(names) <= 12 else ", ".join(names[:12]) + ", ..."
    if not label:
        raise TreeFormatError(f"{what} has no class label (every node, preterminals included, needs one of "
                              f"{allowed})")
    raise TreeFormatError(f"label {label!r} of {what} is not a class ({allowed})")


def _labelled_raw(node: RawTree, classes) -> RawTree:
    """Check every label and bring an SST-style raw tree to a form :func:`canonicalize` keeps whole:
    a unary chain becomes its top node (the top label is the class of the phrase: the root's is the
    sentence's); a bracket of k > 1 bare words (SST's ``(2 8 1\\/2)``, a token with a non-breaking space)
    becomes a node with that class over k leaves of class :data:`NO_CLASS`; ``\\/`` and ``\\*`` in words
    are unescaped."""
    label = _check_class(node, classes)
    children = node[1:]
    words = [c for c in children if isinstance(c, str)]
    if words and len(words) < len(children):
        raise TreeFormatError(f"word {words[0]!r} has no class label (a bare word beside labelled nodes)")
    if words:
        words = [plain_word(w) for w in words]
        return [label, words[0]] if len(words) == 1 else [label] + [[NO_CLASS, w] for w in words]
    if len(children) == 1:  # a unary chain: the top label stays
        _check_class(children[0], classes)
        return _labelled_raw([label] + children[0][1:], classes)
    return [label] + [_labelled_raw(c, classes) for c in children]


def labelled_tree_from_brackets(text: str, classes) -> Tree:
    """One SST-format line (every node, preterminals included, labelled with a class name from ``classes``)
    -> a canonical :class:`Tree` whose ``labels`` and ``tags`` are the class names of the nodes and words.

    Nodes, leaves and spans are those of :func:`tree_from_brackets` (SST trees are binary, so nothing is
    collapsed there); a unary chain keeps its top label. ``-LRB-``/``-RRB-`` words read as ``(``/``)`` and
    ``\\/``, ``\\*`` as ``/``, ``*``. Raises :class:`TreeFormatError` for a node without a label, a label not
    in ``classes`` or more than one tree on the line."""
    raw = parse_brackets(text)
    if len(raw) != 1:
        raise TreeFormatError(f"{len(raw)} trees on one line: a class-labelled line holds one sentence tree")
    return canonicalize([_labelled_raw(raw[0], dict.fromkeys(classes))])  # ordered, O(1) lookups
