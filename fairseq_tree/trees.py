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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

Span = Tuple[int, int]

ROOT_LABEL = "ROOT"
WRAPPER_LABELS = frozenset(["", "ROOT", "TOP"])
NONE_TAG = "-NONE-"
BPE_SUFFIX = "@@"

_UNESCAPE_WORD = {
    "-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]",
}
_ESCAPE_WORD = {w: tok for tok, w in _UNESCAPE_WORD.items()}
_TOKEN_RE = re.compile(r"\(|\)|[^\s()]+")


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

    def __len__(self) -> int:
        return len(self.words)

    @property
    def num_nodes(self) -> int:
        return len(self.labels)

    def flat_spans(self) -> List[int]:
        """``[s0, e0, s1, e1, ...]``: the layout of the binarized ``spans`` dataset."""
        return [x for span in self.spans for x in span]

    def to_brackets(self) -> str:
        return to_brackets(self)

    def parents(self) -> List[int]:
        """Parent node index of each node (-1 for the root). Shape [m]."""
        return node_parents(self.spans)

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
        if self.spans != sorted(self.spans, key=_post_order_key):
            raise ValueError("nodes are not in post-order")
        if n >= 2 and self.spans[-1] != (0, n):
            raise ValueError("the root does not span the sentence")
        children = [0] * m
        for p in node_parents(self.spans):  # also checks nesting
            if p >= 0:
                children[p] += 1
        for j in range(n):
            p = _smallest_cover(self.spans, j)
            if p >= 0:
                children[p] += 1
        if any(c < 2 for c in children):
            raise ValueError("a node has fewer than 2 children")


def _post_order_key(span: Span) -> Tuple[int, int]:
    return (span[1], -span[0])


def post_order(spans: Iterable[Span]) -> List[Span]:
    """Distinct spans in the canonical post-order (sorted by (end, -start): children before parents)."""
    return sorted(set(spans), key=_post_order_key)


def _smallest_cover(spans: Sequence[Span], j: int) -> int:
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


# --------------------------------------------------------------------------------------------------
# Reading brackets
# --------------------------------------------------------------------------------------------------

RawTree = list  # [label, child, child, ...]; a child is a RawTree or a str (a word)


def _parse_tokens(tokens: Sequence[str], pos: int = 0) -> Tuple[List[RawTree], int]:
    """Parse top-level bracket expressions from ``tokens[pos:]`` until the tokens run out."""
    trees: List[RawTree] = []
    stack: List[RawTree] = []
    n = len(tokens)
    i = pos
    while i < n:
        tok = tokens[i]
        if tok == "(":
            # "( (S" : an empty label; "(NP" : a label
            if i + 1 < n and tokens[i + 1] not in ("(", ")"):
                node = [tokens[i + 1]]
                i += 2
            else:
                node = [""]
                i += 1
            stack.append(node)
        elif tok == ")":
            if not stack:
                raise TreeFormatError(f"unbalanced ')' at token {i + 1}")
            node = stack.pop()
            if len(node) == 1:
                raise TreeFormatError(f"empty constituent ({node[0]}) at token {i + 1}")
            if stack:
                stack[-1].append(node)
            else:
                trees.append(node)
            i += 1
        else:
            if not stack:
                raise TreeFormatError(f"word {tok!r} outside any bracket")
            stack[-1].append(tok)
            i += 1
    if stack:
        raise TreeFormatError(f"{len(stack)} unclosed '(' at end of input")
    return trees, i


def parse_brackets(text: str) -> List[RawTree]:
    """All top-level trees in ``text`` as nested lists ``[label, child, ...]``."""
    trees, _ = _parse_tokens(_TOKEN_RE.findall(text))
    if not trees:
        raise TreeFormatError("no tree found")
    return trees


def strip_function_tags(label: str) -> str:
    """``NP-SBJ-1`` -> ``NP``; ``NP=2`` -> ``NP``; ``-LRB-``/``-NONE-`` stay whole."""
    if not label or label[0] == "-":
        return label
    for sep in ("-", "="):
        k = label.find(sep)
        if k > 0:
            label = label[:k]
    return label


def _is_preterminal(node: RawTree) -> bool:
    return len(node) == 2 and isinstance(node[1], str)


def _prune_none(node: RawTree) -> Optional[RawTree]:
    """Remove -NONE- preterminals and the constituents they leave empty (returns None if empty)."""
    if _is_preterminal(node):
        return None if node[0] == NONE_TAG else node
    kept = [node[0]]
    for child in node[1:]:
        if isinstance(child, str):
            kept.append(child)
        else:
            c = _prune_none(child)
            if c is not None:
                kept.append(c)
    return kept if len(kept) > 1 else None


def canonicalize(raw: Sequence[RawTree], unary: str = "lowest") -> Tree:
    """Turn the raw trees of one line (one or several sentences) into a canonical :class:`Tree`."""
    if unary not in ("lowest", "highest", "join"):
        raise ValueError(f"unary must be lowest, highest or join, not {unary!r}")
    sentences = []
    for t in raw:
        t = _prune_none(t)
        if t is None:
            continue
        while t[0] in WRAPPER_LABELS and len(t) == 2 and not isinstance(t[1], str) \
                and not _is_preterminal(t):
            t = t[1]
        sentences.append(t)
    if not sentences:
        raise TreeFormatError("tree has no words (only empty elements)")
    top = sentences[0] if len(sentences) == 1 else [ROOT_LABEL] + sentences

    words: List[str] = []
    tags: List[Optional[str]] = []
    labels: List[str] = []
    spans: List[Span] = []

    def visit(node: RawTree) -> Tuple[int, int]:
        """Emit words and nodes under ``node`` in post-order; returns the node's half-open span."""
        if _is_preterminal(node):
            word = node[1]
            words.append(_UNESCAPE_WORD.get(word, word))
            tags.append(strip_function_tags(node[0]))
            return len(words) - 1, len(words)
        start = len(words)
        n_children = 0
        for child in node[1:]:
            if isinstance(child, str):
                raise TreeFormatError(
                    f"bare word {child!r} under ({node[0]} ...): expected a (POS word) preterminal")
            visit(child)
            n_children += 1
        end = len(words)
        label = strip_function_tags(node[0]) or ROOT_LABEL
        if n_children >= 2:
            labels.append(label)
            spans.append((start, end))
        elif end - start >= 2:
            # a unary chain over a phrase: the child's node was the last one emitted
            if unary == "highest":
                labels[-1] = label
            elif unary == "join":
                labels[-1] = label + "+" + labels[-1]
        # a unary chain over one word disappears (its POS stays in tags)
        return start, end

    visit(top)
    return Tree(words, tags, labels, spans)


def tree_from_brackets(text: str, unary: str = "lowest") -> Tree:
    """Read one line (one or several trees) into canonical form."""
    if unary == "lowest":
        tree = _one_tree_lowest(text)
        if tree is not None:
            return tree
    return canonicalize(parse_brackets(text), unary=unary)


# one match per (TAG word) preterminal, opening bracket (with its label, maybe empty), closing bracket or other
# word: the tokens of _TOKEN_RE, a preterminal's four taken at once
_FAST_RE = re.compile(r"\(\s*([^\s()]+)\s+([^\s()]+)\s*\)|\(\s*([^\s()]*)|(\))|([^\s()]+)")
_STRIPPED: dict = {}  # label -> strip_function_tags(label): labels are few


def _one_tree_lowest(text: str) -> Optional[Tree]:
    """The fast path of ``canonicalize(parse_brackets(text), "lowest")``: one pass, no nested lists. It takes
    one well-formed tree without empty elements (``-NONE-``) and returns None for anything else (several trees,
    a bare word, an empty constituent, unbalanced brackets), which the general path then reads or rejects with
    its message. With ``lowest``, a unary node (a wrapper included) adds nothing."""
    words: List[str] = []
    tags: List[Optional[str]] = []
    labels: List[str] = []
    spans: List[Span] = []
    stack: List[list] = []  # open constituents: [label, first word, children so far]
    unescape, stripped = _UNESCAPE_WORD.get, _STRIPPED
    tops = 0
    for tag, word, label, close, bare in _FAST_RE.findall(text):
        if tag:
            if tag == NONE_TAG:
                return None
            words.append(unescape(word, word))
            t = stripped.get(tag)
            if t is None:
                t = stripped[tag] = strip_function_tags(tag)
            tags.append(t)
        elif close:
            if not stack:
                return None
            label, start, children = stack.pop()
            if children == 0:
                return None
            if children >= 2:
                lab = stripped.get(label)
                if lab is None:
                    lab = stripped[label] = strip_function_tags(label)
                labels.append(lab or ROOT_LABEL)
                spans.append((start, len(words)))
        elif bare:
            return None
        else:
            stack.append([label, len(words), 0])
            continue
        if stack:
            stack[-1][2] += 1
        else:
            tops += 1
    if stack or tops != 1:
        return None
    return Tree(words, tags, labels, spans)


def read_tree_lines(path: str, unary: str = "lowest") -> Iterator[Tree]:
    """One example per line (several trees on a line are merged); errors name file and line."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                raise TreeFormatError("empty line", path, lineno)
            try:
                yield tree_from_brackets(line, unary=unary)
            except TreeFormatError as e:
                raise e.at(path, lineno) from None


def read_treebank(path: str, unary: str = "lowest") -> Iterator[Tuple[int, Tree]]:
    """Each top-level bracket of a (possibly multi-line) .mrg file is one sentence.

    Yields ``(line_number_where_the_tree_starts, tree)``.
    """
    depth = 0
    tokens: List[str] = []
    start_line = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            for tok in _TOKEN_RE.findall(line):
                if start_line is None:
                    if tok != "(":
                        raise TreeFormatError(f"text {tok!r} outside any tree", path, lineno)
                    start_line = lineno
                tokens.append(tok)
                if tok == "(":
                    depth += 1
                elif tok == ")":
                    depth -= 1
                    if depth == 0:
                        try:
                            raw, _ = _parse_tokens(tokens)
                            yield start_line, canonicalize(raw, unary=unary)
                        except TreeFormatError as e:
                            raise e.at(path, start_line) from None
                        tokens, start_line = [], None
    if tokens:
        raise TreeFormatError(f"unclosed tree at end of file ({depth} open)", path, start_line)


# --------------------------------------------------------------------------------------------------
# Class-labelled trees (Stanford Sentiment Treebank format)
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Writing brackets
# --------------------------------------------------------------------------------------------------

def escape_word(word: str) -> str:
    """A word as a bracket-file token: ``( ) { } [ ]`` -> ``-LRB- -RRB- -LCB- -RCB- -LSB- -RSB-`` (PTB)."""
    return _ESCAPE_WORD.get(word, word)


def to_brackets(tree: Tree) -> str:
    """One-line PTB brackets of a canonical tree; ``tree_from_brackets`` inverts it exactly."""
    n = len(tree.words)
    # open/close events per leaf; spans sorted top-down (start asc, end desc) open in order
    opens: List[List[str]] = [[] for _ in range(n)]
    closes = [0] * n
    for (s, e), label in sorted(zip(tree.spans, tree.labels), key=lambda x: (x[0][0], -x[0][1])):
        opens[s].append(label)
        closes[e - 1] += 1
    out = []
    for j in range(n):
        for label in opens[j]:
            out.append("(" + label + " ")
        tag = tree.tags[j] if tree.tags[j] is not None else "X"
        out.append(f"({tag} {escape_word(tree.words[j])})")
        out.append(")" * closes[j])
        if j + 1 < n:
            out.append(" ")
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# BPE subtrees (Nguyen et al. 2020, Figure 7)
# --------------------------------------------------------------------------------------------------

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
    nodes.sort(key=lambda x: _post_order_key(x[0]))
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


# --------------------------------------------------------------------------------------------------
# Conversions: unlabeled spans, syntactic distances, dependencies
# --------------------------------------------------------------------------------------------------

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


def heads_to_arcs(heads: Sequence[int]) -> List[Tuple[int, int]]:
    """CoNLL heads (1-based, 0 = root) -> arcs ``(head, dependent)``, dependents 1-based."""
    return [(h, d) for d, h in enumerate(heads, 1)]


def arcs_to_heads(arcs: Iterable[Tuple[int, int]], n: int) -> List[int]:
    """Arcs ``(head, dependent)`` -> heads list; every word 1..n needs exactly one head."""
    heads = [None] * n
    for h, d in arcs:
        if not (1 <= d <= n and 0 <= h <= n):
            raise ValueError(f"arc {(h, d)} out of range for {n} words")
        if heads[d - 1] is not None:
            raise ValueError(f"word {d} has two heads")
        heads[d - 1] = h
    missing = [i + 1 for i, h in enumerate(heads) if h is None]
    if missing:
        raise ValueError(f"words without a head: {missing}")
    return heads  # type: ignore[return-value]


def check_heads(heads: Sequence[int]) -> None:
    """A dependency tree: exactly one root, heads in range, no cycles."""
    n = len(heads)
    if sum(1 for h in heads if h == 0) != 1:
        raise ValueError("a dependency tree needs exactly one root")
    for d, h in enumerate(heads, 1):
        if not 0 <= h <= n or h == d:
            raise ValueError(f"bad head {h} for word {d}")
    for d in range(1, n + 1):
        seen, cur = set(), d
        while cur != 0:
            if cur in seen:
                raise ValueError(f"cycle through word {cur}")
            seen.add(cur)
            cur = heads[cur - 1]


@dataclass
class DependencyTree:
    words: List[str]
    tags: List[str]
    heads: List[int]
    relations: List[str]
    line: Optional[int] = None  # where the sentence's first token line is in its file


def plain_word(word: str) -> str:
    """A token with the PTB escapes undone, for comparing words across files that escape differently: ``-LRB-``
    etc. (the six of :func:`escape_word`) and ``\\/``, ``\\*`` (escaped in .mrg, often not in dependency files)."""
    return _UNESCAPE_WORD.get(word, word).replace("\\/", "/").replace("\\*", "*")


def read_conllu(path: str, trees: bool = True) -> Iterator[DependencyTree]:
    """CoNLL-U / CoNLL-X sentences (multi-word token and empty-node lines are skipped). ``trees``: every sentence
    must be a dependency tree (:func:`check_heads`); otherwise heads need only be in range (predicted heads, e.g.
    per-word argmaxes, may have cycles or several roots)."""
    def finish(rows, lineno):
        heads = [r[2] for r in rows]
        try:
            if trees:
                check_heads(heads)
            elif not all(0 <= h <= len(heads) for h in heads):
                raise ValueError(f"head out of range for {len(heads)} words")
        except ValueError as e:
            raise TreeFormatError(str(e), path, lineno) from None
        return DependencyTree([r[0] for r in rows], [r[1] for r in rows],
                              [r[2] for r in rows], [r[3] for r in rows], lineno)

    rows: list = []
    start = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                if rows:
                    yield finish(rows, start)
                rows, start = [], None
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 8:
                raise TreeFormatError(f"expected 10 tab-separated columns, got {len(cols)}", path, lineno)
            if "-" in cols[0] or "." in cols[0]:
                continue
            if start is None:
                start = lineno
            try:
                head = int(cols[6])
            except ValueError:
                raise TreeFormatError(f"HEAD {cols[6]!r} is not an integer", path, lineno) from None
            tag = cols[4] if cols[4] != "_" else cols[3]
            rows.append((cols[1], tag, head, cols[7]))
    if rows:
        yield finish(rows, start)
