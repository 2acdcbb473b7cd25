"""The EVALB view of a treebank sentence: :class:`ParseTree`, labeled spans that keep one-word unaries.

Parsing needs one thing the canonical :class:`~fairseq_tree.trees.tree.Tree` drops: a unary chain over a single
word (``(NP (PRP it))``) is a constituent that EVALB scores, so the parser must predict it. The reader here
(:func:`read_parse_trees`) builds on :func:`parse_brackets`/:func:`prune_none` and keeps such spans: a
:class:`ParseTree` has labeled half-open spans of length >= 1, post-order, unary chains joined into one label
(``S+VP``, ``S+NP`` over one word), function tags stripped, ``-NONE-`` removed, the outer ``TOP``/``ROOT``/empty
wrapper removed (kept as the root label only when the sentence is a bare preterminal, so every tree has a labeled
whole-sentence span). :func:`labeled_to_brackets` writes it back, joined labels split into unary chains again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence

from fairseq_tree.trees.brackets import (
    UNESCAPE_WORD,
    bracket_line,
    is_preterminal,
    parse_brackets,
    preterminals,
    prune_none,
    strip_function_tags,
)
from fairseq_tree.trees.tree import ROOT_LABEL, WRAPPER_LABELS, LabeledSpan, TreeFormatError


@dataclass
class ParseTree:
    """words [n], tags [n], spans: (start, end, label) half-open, length >= 1, post-order, root last."""

    words: List[str]
    tags: List[str]
    spans: List[LabeledSpan] = field(default_factory=list)
    heads: Optional[List[int]] = None
    relations: Optional[List[str]] = None

    def __len__(self):
        return len(self.words)


def raw_to_parse_tree(raw: Sequence) -> ParseTree:
    """Raw bracket trees of one sentence (:func:`parse_brackets` output) -> :class:`ParseTree`."""
    nodes = [t for t in (prune_none(r) for r in raw) if t is not None]
    if not nodes:
        raise TreeFormatError("tree has no words (only empty elements)")
    top = nodes[0] if len(nodes) == 1 else [ROOT_LABEL] + nodes
    while top[0] in WRAPPER_LABELS and len(top) == 2 and not isinstance(top[1], str) \
            and not is_preterminal(top[1]):
        top = top[1]
    if is_preterminal(top):  # a bare one-word sentence: give it a root
        top = [ROOT_LABEL, top]
    words: List[str] = []
    tags: List[str] = []
    spans: List[LabeledSpan] = []

    def visit(node):
        if is_preterminal(node):
            words.append(UNESCAPE_WORD.get(node[1], node[1]))
            tags.append(strip_function_tags(node[0]))
            return
        start, before = len(words), len(spans)
        children = node[1:]
        for child in children:
            if isinstance(child, str):
                raise TreeFormatError(f"bare word {child!r} under ({node[0]} ...)")
            visit(child)
        label = strip_function_tags(node[0]) or ROOT_LABEL
        if len(children) == 1 and not is_preterminal(children[0]) and len(spans) > before:
            s, e, lab = spans[-1]  # unary chain over a phrase: join onto the child's span
            spans[-1] = (s, e, label + "+" + lab)
        else:
            spans.append((start, len(words), label))

    visit(top)
    return ParseTree(words, tags, spans)


def parse_tree_from_brackets(text: str) -> ParseTree:
    """One line (one or several trees) -> :class:`ParseTree`."""
    return raw_to_parse_tree(parse_brackets(text))


def read_parse_trees(path: str) -> Iterator[ParseTree]:
    """Every top-level bracket of a .mrg file (one- or multi-line) is one sentence."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        raws = parse_brackets(text)
    except TreeFormatError as e:
        raise e.at(path, None) from None
    for k, raw in enumerate(raws, 1):
        try:
            yield raw_to_parse_tree([raw])
        except TreeFormatError as e:
            raise TreeFormatError(f"tree {k}: {e.message}", path) from None


def labeled_to_brackets(words: Sequence[str], tags: Sequence[str], spans: Sequence[LabeledSpan]) -> str:
    """One-line PTB brackets with POS preterminals; joined labels ``S+VP`` become unary chains again; words are
    escaped as the treebank writes them (:func:`escape_word`: ``{`` -> ``-LCB-``), so
    :func:`parse_tree_from_brackets` reads back the same tree."""
    leaves = preterminals(words, [tag or "X" for tag in tags])  # an empty tag too
    return bracket_line(leaves, [(s, e, part) for s, e, label in spans for part in label.split("+")])
