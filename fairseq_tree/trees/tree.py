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

from fairseq_tree.trees.svg import tree_svg

Span = Tuple[int, int]  # a half-open leaf range (start, end): the one span type of the package
LabeledSpan = Tuple[int, int, str]  # (start, end, label)

ROOT_LABEL = "ROOT"
WRAPPER_LABELS = frozenset(["", "ROOT", "TOP"])
NONE_TAG = "-NONE-"
BPE_SUFFIX = "@@"

#: PTB escape token -> surface word (the six brackets); :data:`ESCAPE_WORD` is its inverse
UNESCAPE_WORD = {
    "-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]",
}
ESCAPE_WORD = {w: tok for tok, w in UNESCAPE_WORD.items()}


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

    # views (the writers they use are defined below; the readers live in brackets, conllu and spans)
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
        """One line of PTB brackets (:func:`bracket_line`); ``one_word``: with the
        EVALB view's one-word constituents, joined chains written as unary chains again."""
        if one_word:
            return labeled_to_brackets(self.words, self.tags, self.labeled_spans(one_word=True))
        return bracket_line(preterminals(self.words, self.tags),
                            [(s, e, label) for (s, e), label in zip(self.spans, self.labels)])

    def __str__(self) -> str:
        """The tree as one line of brackets, with its one-word constituents (what the parse CLIs write)."""
        return self.to_brackets(one_word=True)

    def to_json(self) -> dict:
        """Plain data (``--format jsonl``): words, tags, one-line brackets, and the heads (0 = root) and
        relations when the tree has them."""
        out = {"words": list(self.words), "tags": list(self.tags), "tree": str(self)}
        if self.heads is not None:
            out["heads"] = list(self.heads)
        if self.relations is not None:
            out["relations"] = list(self.relations)
        return out

    def labeled_spans(self, one_word: bool = False) -> List[LabeledSpan]:
        """``(start, end, label)`` of every node, post-order. Shape [m]. ``one_word``: the EVALB view, the
        ``word_phrases`` too (spans of length 1), post-order (a one-word span before the nodes that end with it)."""
        spans = [(s, e, label) for (s, e), label in zip(self.spans, self.labels)]
        if not one_word or not self.word_phrases:
            return spans
        words = [(j, j + 1, label) for j, label in enumerate(self.word_phrases) if label is not None]
        return sorted(words + spans, key=lambda x: post_order_key(x[:2]))

    def svg_nodes(self) -> List[LabeledSpan]:
        """The nodes :meth:`to_svg` draws: ``labeled_spans(one_word=True)`` with a joined chain ``S+VP`` split into
        its labels, the lower first (post-order, as EVALB reads the brackets :meth:`to_brackets` writes)."""
        return [(s, e, part) for s, e, label in self.labeled_spans(one_word=True)
                for part in reversed(label.split("+"))]

    def to_svg(self, node_classes: Optional[Sequence[str]] = None,
               leaf_classes: Optional[Sequence[str]] = None) -> str:
        """The tree drawn as one ``<svg>`` string (labels, tags, words; :func:`fairseq_tree.trees.svg.tree_svg`),
        the drawing ``fairseq-tree-view``'s page makes of the same tree; optional extra CSS classes per node of
        :meth:`svg_nodes` / per leaf."""
        return tree_svg(self.words, self.tags, self.svg_nodes(), node_classes, leaf_classes)

    def _repr_svg_(self) -> str:
        """Jupyter shows a Tree as its drawing."""
        return self.to_svg()

    def distances(self) -> List[int]:
        """Syntactic distances [n - 1] (:func:`tree_to_distances`)."""
        return tree_to_distances(self.spans, len(self.words))

    def parents(self) -> List[int]:
        """Parent node index of each node (-1 for the root). Shape [m]."""
        return node_parents(self.spans)

    def conllu(self, sent_id: Optional[str] = None) -> List[str]:
        """The sentence as CoNLL-U lines (:func:`conllu_lines`); needs ``heads``."""
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


# ------------------------------------------------------------------------------------- writers (the views)

def escape_word(word: str) -> str:
    """A word as a bracket-file token: ``( ) { } [ ]`` -> ``-LRB- -RRB- -LCB- -RCB- -LSB- -RSB-`` (PTB)."""
    return ESCAPE_WORD.get(word, word)


def bracket_line(leaves: Sequence[str], nodes: Iterable[LabeledSpan]) -> str:
    """The one bracket writer: ``leaves`` [n] are the formatted leaves (``(TAG word)`` or a bare word), ``nodes``
    the (start, end, label) half-open constituents, in any order; nodes over the same leaves nest in the order
    given (a unary chain top first). -> one line ``(S (NP (DT the) (NN cat)) ..)``."""
    n = len(leaves)
    opens: List[List[str]] = [[] for _ in range(n)]
    closes = [0] * n
    for s, e, label in sorted(nodes, key=lambda x: (x[0], -x[1])):  # top-down: start asc, end desc (stable)
        opens[s].append(label)
        closes[e - 1] += 1
    return " ".join("".join("(" + label + " " for label in opens[j]) + leaves[j] + ")" * closes[j]
                    for j in range(n))


def preterminals(words: Sequence[str], tags: Sequence[Optional[str]]) -> List[str]:
    """``(TAG word)`` leaves, words escaped (:func:`escape_word`), a None tag written ``X``."""
    return [f"({tag if tag is not None else 'X'} {escape_word(word)})" for word, tag in zip(words, tags)]


def labeled_to_brackets(words: Sequence[str], tags: Sequence[Optional[str]], spans: Iterable[LabeledSpan]) -> str:
    """One-line PTB brackets of labeled spans of length >= 1 (the EVALB view, ``Tree.labeled_spans(one_word=True)``)
    with POS preterminals (an empty or None tag written ``X``); joined labels ``S+VP`` become unary chains again;
    words escaped as the treebank writes them, so ``tree_from_brackets(.., "join", one_word=True)`` reads back the
    same tree."""
    leaves = preterminals(words, [tag or "X" for tag in tags])
    return bracket_line(leaves, [(s, e, part) for s, e, label in spans for part in label.split("+")])


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


def conllu_lines(words: Sequence[str], heads: Sequence[int], tags: Optional[Sequence[str]] = None,
                 sent_id: Optional[str] = None, upos: Optional[Sequence[str]] = None,
                 relations: Optional[Sequence[str]] = None) -> List[str]:
    """One CoNLL-U sentence (no trailing blank line), 10 tab-separated columns per word.

    ``tags`` fill XPOS (and UPOS unless ``upos`` is given; ``_`` without tags); ``relations`` fill DEPREL,
    by default ``root`` for head 0 and ``dep`` otherwise."""
    if len(words) != len(heads):
        raise ValueError(f"{len(words)} words vs {len(heads)} heads")
    lines = [] if sent_id is None else [f"# sent_id = {sent_id}"]
    lines.append("# text = " + " ".join(words))
    for d, (w, h) in enumerate(zip(words, heads), 1):
        tag = tags[d - 1] if tags is not None else "_"
        utag = upos[d - 1] if upos is not None else tag
        rel = relations[d - 1] if relations is not None else ("root" if h == 0 else "dep")
        lines.append("\t".join([str(d), w, "_", utag, tag, "_", str(h), rel, "_", "_"]))
    return lines
