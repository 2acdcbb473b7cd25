"""Bracketed trees in and out: PTB escapes, the tokenizer, raw nested lists, the canonical reader
(:func:`tree_from_brackets`, :func:`read_tree_lines`, :func:`read_treebank`) and the writers
(:func:`to_brackets` for a labelled :class:`Tree`, :func:`spans_to_brackets` for unlabeled induced spans).

Words: ``-LRB-``/``-RRB-``, ``-LCB-``/``-RCB-``, ``-LSB-``/``-RSB-`` leaves read as ``( ) { } [ ]`` and are
written back escaped (:func:`escape_word`), so reading and writing are exact inverses.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from fairseq_tree.trees.io import atomic_write_text
from fairseq_tree.trees.tree import (  # noqa: F401  (escape_word .. labeled_to_brackets: the writers live with Tree)
    ESCAPE_WORD,
    NONE_TAG,
    ROOT_LABEL,
    UNESCAPE_WORD,
    WRAPPER_LABELS,
    LabeledSpan,
    Span,
    Tree,
    TreeFormatError,
    bracket_line,
    escape_word,
    labeled_to_brackets,
    preterminals,
)

#: the tokens of a bracket file: ``(``, ``)`` and anything else without spaces or brackets
TOKEN_RE = re.compile(r"\(|\)|[^\s()]+")

RawTree = list  # [label, child, child, ...]; a child is a RawTree or a str (a word)


def parse_tokens(tokens: Sequence[str], pos: int = 0) -> Tuple[List[RawTree], int]:
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
    trees, _ = parse_tokens(TOKEN_RE.findall(text))
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


def is_preterminal(node: RawTree) -> bool:
    """``(TAG word)``: a node over exactly one word."""
    return len(node) == 2 and isinstance(node[1], str)


def prune_none(node: RawTree) -> Optional[RawTree]:
    """Remove -NONE- preterminals and the constituents they leave empty (returns None if empty)."""
    if is_preterminal(node):
        return None if node[0] == NONE_TAG else node
    kept = [node[0]]
    for child in node[1:]:
        if isinstance(child, str):
            kept.append(child)
        else:
            c = prune_none(child)
            if c is not None:
                kept.append(c)
    return kept if len(kept) > 1 else None


def _evalb_top(raw: Sequence[RawTree]) -> RawTree:
    """The top of the EVALB view: the sentences of a line under one ``ROOT`` (each kept whole), the outer wrapper
    (``ROOT``/``TOP``/empty) removed over a phrase but kept over a lone preterminal (a bare ``(NN x)`` gets a
    ``ROOT``), so every sentence has a labeled whole-sentence span."""
    nodes = [t for t in (prune_none(r) for r in raw) if t is not None]
    if not nodes:
        raise TreeFormatError("tree has no words (only empty elements)")
    top = nodes[0] if len(nodes) == 1 else [ROOT_LABEL] + nodes
    while top[0] in WRAPPER_LABELS and len(top) == 2 and not isinstance(top[1], str) \
            and not is_preterminal(top[1]):
        top = top[1]
    return [ROOT_LABEL, top] if is_preterminal(top) else top


def _canonical_top(raw: Sequence[RawTree]) -> RawTree:
    """The top of the canonical form: each sentence's outer wrappers removed, several sentences under ``ROOT``."""
    sentences = []
    for t in raw:
        t = prune_none(t)
        if t is None:
            continue
        while t[0] in WRAPPER_LABELS and len(t) == 2 and not isinstance(t[1], str) \
                and not is_preterminal(t):
            t = t[1]
        sentences.append(t)
    if not sentences:
        raise TreeFormatError("tree has no words (only empty elements)")
    return sentences[0] if len(sentences) == 1 else [ROOT_LABEL] + sentences


def _chain(unary: str, upper: str, lower: str) -> str:
    """The label a unary chain keeps: ``lowest``, ``highest`` or ``join`` (``S+VP``, top first)."""
    return lower if unary == "lowest" else upper if unary == "highest" else upper + "+" + lower


def canonicalize(raw: Sequence[RawTree], unary: str = "lowest", one_word: bool = False) -> Tree:
    """Turn the raw trees of one line (one or several sentences) into a canonical :class:`Tree`.

    ``one_word``: also keep the one-word constituents (``word_phrases``, their chains collapsed by the same
    ``unary`` rule) with the EVALB view's top (:func:`_evalb_top`); ``unary="join", one_word=True`` is the view
    the LAL parser is trained on and scored by."""
    if unary not in ("lowest", "highest", "join"):
        raise ValueError(f"unary must be lowest, highest or join, not {unary!r}")
    top = _evalb_top(raw) if one_word else _canonical_top(raw)
    words: List[str] = []
    tags: List[Optional[str]] = []
    labels: List[str] = []
    spans: List[Span] = []
    phrases: List[Optional[str]] = []

    def visit(node: RawTree) -> Tuple[int, int]:
        """Emit words and nodes under ``node`` in post-order; returns the node's half-open span."""
        if is_preterminal(node):
            word = node[1]
            words.append(UNESCAPE_WORD.get(word, word))
            tags.append(strip_function_tags(node[0]))
            phrases.append(None)
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
        elif end - start >= 2:  # a unary chain over a phrase: the child's node was the last one emitted
            labels[-1] = _chain(unary, label, labels[-1])
        else:  # a unary chain over one word: gone from the canonical form (its POS stays in tags)
            below = phrases[start]
            phrases[start] = label if below is None else _chain(unary, label, below)
        return start, end

    visit(top)
    return Tree(words, tags, labels, spans, phrases if one_word else None)


def tree_from_brackets(text: str, unary: str = "lowest", one_word: bool = False) -> Tree:
    """Read one line (one or several trees) into canonical form (``one_word``: see :func:`canonicalize`)."""
    if unary == "lowest" and not one_word:
        tree = _one_tree_lowest(text)
        if tree is not None:
            return tree
    return canonicalize(parse_brackets(text), unary=unary, one_word=one_word)


# one match per (TAG word) preterminal, opening bracket (with its label, maybe empty), closing bracket or other
# word: the tokens of TOKEN_RE, a preterminal's four taken at once
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
    unescape, stripped = UNESCAPE_WORD.get, _STRIPPED
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


def read_treebank(path: str, unary: str = "lowest", one_word: bool = False) -> Iterator[Tuple[int, Tree]]:
    """Each top-level bracket of a (possibly multi-line) .mrg file is one sentence.

    Yields ``(line_number_where_the_tree_starts, tree)``; ``one_word``: see :func:`canonicalize`.
    """
    depth = 0
    tokens: List[str] = []
    start_line = None
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            for tok in TOKEN_RE.findall(line):
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
                            raw, _ = parse_tokens(tokens)
                            yield start_line, canonicalize(raw, unary=unary, one_word=one_word)
                        except TreeFormatError as e:
                            raise e.at(path, start_line) from None
                        tokens, start_line = [], None
    if tokens:
        raise TreeFormatError(f"unclosed tree at end of file ({depth} open)", path, start_line)


def read_parse_trees(path: str) -> Iterator[Tree]:
    """The EVALB view (``unary="join", one_word=True``) of every sentence of a treebank file: what the LAL
    parser is trained on and what it is scored against."""
    for _, tree in read_treebank(path, unary="join", one_word=True):
        yield tree



# --------------------------------------------------------------------------------------------------
# Writing brackets
# --------------------------------------------------------------------------------------------------

def to_brackets(tree: Tree) -> str:
    """One-line PTB brackets of a canonical tree (:meth:`Tree.to_brackets`); ``tree_from_brackets`` inverts it
    exactly."""
    return tree.to_brackets()


def plain_word(word: str) -> str:
    """A token with the PTB escapes undone, for comparing words across files that escape differently: ``-LRB-``
    etc. (the six of :func:`escape_word`) and ``\\/``, ``\\*`` (escaped in .mrg, often not in dependency files)."""
    return UNESCAPE_WORD.get(word, word).replace("\\/", "/").replace("\\*", "*")


def spans_to_brackets(spans: Iterable[Span], words: Sequence[str], label: str = "S",
                      leaf_label: Optional[str] = None) -> str:
    """``(S (S w1 w2) w3)``: nested half-open spans (root added if missing, single words ignored) as one line
    of brackets with a dummy ``label``; words are bare leaves (nltk style) or ``(leaf_label w)``, escaped as the
    treebank writes them (:func:`escape_word`: ``(`` -> ``-LRB-``, ``{`` -> ``-LCB-``)."""
    n = len(words)
    if n == 0:
        raise ValueError("empty sentence")
    nodes = {(i, j) for i, j in spans if j - i >= 2}
    nodes.add((0, n))
    for i, j in nodes:
        if not 0 <= i < j <= n:
            raise ValueError(f"span {(i, j)} out of range for {n} words")
    leaves = [escape_word(w) for w in words]
    if leaf_label:
        leaves = [f"({leaf_label} {w})" for w in leaves]
    return bracket_line(leaves, [(i, j, label) for i, j in nodes])


def write_brackets(path: str, spans: Sequence[Sequence[Span]], words: Sequence[Sequence[str]],
                   label: str = "S", leaf_label: Optional[str] = None) -> None:
    """One bracketed tree per line (:func:`spans_to_brackets`), written atomically."""
    if len(words) != len(spans):
        raise ValueError(f"{len(words)} sentences vs {len(spans)} span lists")
    atomic_write_text(path, "".join(spans_to_brackets(s, w, label, leaf_label) + "\n" for s, w in zip(spans, words)))
