"""The one tree representation of fairseq-tree.

A sentence with ``n`` leaves and ``m`` nonterminal nodes is a :class:`Tree`:

* ``words`` [n]: the leaves (words, or BPE pieces ending in ``@@`` after :func:`expand_subwords`);
* ``tags`` [n]: the POS tag of each leaf (a BPE piece carries its word's tag);
* ``labels`` [m]: node labels;
* ``spans`` [m]: ``(start, end)`` pairs, **half-open** leaf ranges ``start <= j < end``.

Canonical form (what every reader here returns, and what gets binarized):

* preterminals (POS over one word) are not nodes, their tag is kept in ``tags``;
* empty elements (``-NONE-``) and the constituents they leave empty are removed;
* function tags and indices are stripped (``NP-SBJ-1`` -> ``NP``, ``NP=2`` -> ``NP``); labels that
  start with ``-`` (``-LRB-``, ``-NONE-``) are kept whole;
* outer wrappers (the empty ``( (S ..) )`` bracket, ``ROOT``, ``TOP``) over a single child are removed;
* unary chains are collapsed (by default the *lowest* label of the chain is kept; ``unary="highest"``
  or ``"join"`` -> ``S+VP``), and a chain that ends in a preterminal disappears, so spans are unique,
  every node has >= 2 children and ``m <= n - 1`` (``m == 0`` for a one-word sentence);
* several sentence trees on one line go under one node labelled ``ROOT``;
* nodes are in **post-order**: children before parents, left to right, root last. Because spans are
  unique and nested this is the same as sorting by ``(end, -start)``. For ``n >= 2`` the root is the
  last node and spans ``(0, n)``.

Words hold the surface token: ``-LRB-``/``-RRB-``, ``-LCB-``/``-RCB-`` and ``-LSB-``/``-RSB-`` leaves are
read as ``( ) { } [ ]``, and written back as brackets with the same six escapes (:func:`escape_word`), as the
Penn Treebank writes them: EVALB compares words as written, so a parse of a treebank sentence must spell
``{`` as the treebank does (``-LCB-``). Reading and writing are exact inverses. Labels are never unescaped.

The same type carries what the other methods need, each filled only by the reader that has it:

* ``word_phrases`` [n] (the EVALB view, read with ``one_word=True``): the label of the one-word constituent
  above each word's preterminal (``(NP (PRP it))`` -> ``NP``; a chain joined top first, ``S+VP``), None where
  there is none. EVALB scores those brackets, so the LAL parser predicts them: :meth:`Tree.labeled_spans` with
  ``one_word=True`` gives every labeled span of length >= 1 in post-order;
* ``heads`` [n] (1-based, 0 = root) and ``relations`` [n]: a dependency tree (CoNLL-U in and out,
  :mod:`.conllu`; the LAL parser's dependency head); a CoNLL-U sentence is a Tree with no nodes;
* ``line``: where the sentence starts in the file it was read from (for ``FILE:LINE`` messages).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

Span = Tuple[int, int]  # a half-open leaf range (start, end): the one span type of the package
LabeledSpan = Tuple[int, int, str]  # (start, end, label)

ROOT_LABEL = "ROOT"
WRAPPER_LABELS = frozenset(["", "ROOT", "TOP"])
NONE_TAG = "-NONE-"
BPE_SUFFIX = "@@"

class TreeFormatError(ValueError):
    """A malformed bracketed tree. ``path``/``line`` are filled in by the readers that know them."""

    def __init__(self, message: str, path: Optional[str] = None, line: Optional[int] = None):
        self.message, self.path, self.line = message, path, line
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        elif self.line is not None:
            where = f"line {self.line}: "
        return where + self.message

    def at(self, path: Optional[str], line: Optional[int]) -> "TreeFormatError":
        return TreeFormatError(self.message, path, line)


@dataclass
class Tree:
    """A sentence in canonical form (see the module docstring). ``spans`` are half-open."""

    words: List[str]
    tags: List[Optional[str]]
    labels: List[str] = field(default_factory=list)
    spans: List[Span] = field(default_factory=list)
    word_phrases: Optional[List[Optional[str]]] = None
    heads: Optional[List[int]] = None
    relations: Optional[List[str]] = None
    line: Optional[int] = None

    def __len__(self) -> int:
        return len(self.words)

    @property
    def num_nodes(self) -> int:
        return len(self.labels)

    def flat_spans(self) -> List[int]:
        """``[s0, e0, s1, e1, ...]``: the layout of the binarized ``spans`` dataset."""
        return [x for span in self.spans for x in span]

    # views (the functions live in the modules that import this one, hence the local imports)
    @classmethod
    def from_brackets(cls, text: str, unary: str = "lowest", one_word: bool = False) -> "Tree":
        """:func:`~fairseq_tree.trees.brackets.tree_from_brackets` (``one_word``: the EVALB view)."""
        from fairseq_tree.trees.brackets import tree_from_brackets

        return tree_from_brackets(text, unary, one_word)

    @classmethod
    def from_labeled_spans(cls, words: Sequence[str], tags: Sequence[Optional[str]],
                           spans: Iterable[LabeledSpan], heads: Optional[Sequence[int]] = None,
                           relations: Optional[Sequence[str]] = None) -> "Tree":
        """The inverse of ``labeled_spans(one_word=True)``: distinct nested spans of length >= 1 (a parser's
        output; chains joined ``S+VP``) -> a Tree whose one-word spans are its ``word_phrases``."""
        n = len(words)
        phrases: List[Optional[str]] = [None] * n
        nodes = []
        for s, e, label in spans:
            if not 0 <= s < e <= n:
                raise ValueError(f"span {(s, e)} out of range for {n} words")
            if e - s == 1:
                phrases[s] = label
            else:
                nodes.append((s, e, label))
        nodes.sort(key=lambda x: post_order_key(x[:2]))
        return cls(list(words), list(tags), [x[2] for x in nodes], [(s, e) for s, e, _ in nodes], phrases,
                   None if heads is None else list(heads), None if relations is None else list(relations))

    def to_brackets(self, one_word: bool = False) -> str:
        """One line of PTB brackets (:func:`~fairseq_tree.trees.brackets.to_brackets`); ``one_word``: with the
        EVALB view's one-word constituents, joined chains written as unary chains again."""
        from fairseq_tree.trees.brackets import labeled_to_brackets, to_brackets

        if one_word:
            return labeled_to_brackets(self.words, self.tags, self.labeled_spans(one_word=True))
        return to_brackets(self)

    def labeled_spans(self, one_word: bool = False) -> List[LabeledSpan]:
        """``(start, end, label)`` of every node, post-order. Shape [m]. ``one_word``: the EVALB view, the
        ``word_phrases`` too (spans of length 1), post-order (a one-word span before the nodes that end with it)."""
        spans = [(s, e, label) for (s, e), label in zip(self.spans, self.labels)]
        if not one_word or not self.word_phrases:
            return spans
        words = [(j, j + 1, label) for j, label in enumerate(self.word_phrases) if label is not None]
        return sorted(words + spans, key=lambda x: post_order_key(x[:2]))

    def distances(self) -> List[int]:
        """Syntactic distances [n - 1] (:func:`~fairseq_tree.trees.spans.tree_to_distances`)."""
        from fairseq_tree.trees.spans import tree_to_distances

        return tree_to_distances(self.spans, len(self.words))

    def parents(self) -> List[int]:
        """Parent node index of each node (-1 for the root). Shape [m]."""
        return node_parents(self.spans)

    def conllu(self, sent_id: Optional[str] = None) -> List[str]:
        """The sentence as CoNLL-U lines (:func:`~fairseq_tree.trees.conllu.conllu_lines`); needs ``heads``."""
        from fairseq_tree.trees.conllu import conllu_lines

        if self.heads is None:
            raise ValueError("a tree without heads has no CoNLL-U view")
        return conllu_lines(self.words, self.heads, self.tags, sent_id, relations=self.relations)

    def check(self) -> None:
        """Assert the canonical-form invariants; raises ``ValueError`` naming the broken one."""
        n, m = len(self.words), len(self.labels)
        if len(self.tags) != n or len(self.spans) != m:
            raise ValueError("words/tags or labels/spans differ in length")
        if n == 0:
            raise ValueError("empty tree")
        if m > max(n - 1, 0):
            raise ValueError(f"m={m} > n-1={n - 1}")
        if len(set(self.spans)) != m:
            raise ValueError("duplicate spans")
        if any(not (0 <= s < e <= n and e - s >= 2) for s, e in self.spans):
            raise ValueError("span out of range or shorter than 2")
        if self.spans != sorted(self.spans, key=post_order_key):
            raise ValueError("nodes are not in post-order")
        if n >= 2 and self.spans[-1] != (0, n):
            raise ValueError("the root does not span the sentence")
        children = [0] * m
        for p in node_parents(self.spans):  # also checks nesting
            if p >= 0:
                children[p] += 1
        for j in range(n):
            p = smallest_cover(self.spans, j)
            if p >= 0:
                children[p] += 1
        if any(c < 2 for c in children):
            raise ValueError("a node has fewer than 2 children")


def post_order_key(span: Span) -> Tuple[int, int]:
    """Sort key of the canonical post-order: ``(end, -start)``."""
    return (span[1], -span[0])


def post_order(spans: Iterable[Span]) -> List[Span]:
    """Distinct spans in the canonical post-order (sorted by (end, -start): children before parents)."""
    return sorted(set(spans), key=post_order_key)


def smallest_cover(spans: Sequence[Span], j: int) -> int:
    """Index of the shortest span covering leaf ``j`` (-1 if none)."""
    best, best_len = -1, None
    for i, (s, e) in enumerate(spans):
        if s <= j < e and (best_len is None or e - s < best_len):
            best, best_len = i, e - s
    return best


def node_parents(spans: Sequence[Span]) -> List[int]:
    """Parent of each node given nested spans in post-order (-1 for the root). O(m) with a stack."""
    parents = [-1] * len(spans)
    stack: List[int] = []  # nodes whose parent is not yet known, left to right
    for i, (s, e) in enumerate(spans):
        while stack and spans[stack[-1]][0] >= s:
            c = stack.pop()
            cs, ce = spans[c]
            if ce > e:
                raise ValueError(f"spans {spans[c]} and {(s, e)} cross or are out of post-order")
            parents[c] = i
        if stack and spans[stack[-1]][1] > s:
            raise ValueError(f"spans {spans[stack[-1]]} and {(s, e)} cross")
        stack.append(i)
    return parents

