"""Dependency trees: heads/arcs helpers, the CoNLL-U reader and the one CoNLL-U writer.

Heads are 1-based with 0 for the root (CoNLL convention); a sentence of n words has n heads. A CoNLL-U sentence is
read as a :class:`~fairseq_tree.trees.tree.Tree` with ``heads`` and ``relations`` and no nodes.
"""

from __future__ import annotations

from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from fairseq_tree.trees.io import atomic_write_text
from fairseq_tree.trees.tree import Tree, TreeFormatError, conllu_lines  # noqa: F401  (re-exported)


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


def read_conllu(path: str, trees: bool = True) -> Iterator[Tree]:
    """CoNLL-U / CoNLL-X sentences as Trees (words, tags, heads, relations, line; multi-word token and empty-node
    lines are skipped). ``trees``: every sentence must be a dependency tree (:func:`check_heads`); otherwise heads
    need only be in range (predicted heads, e.g. per-word argmaxes, may have cycles or several roots)."""
    def finish(rows, lineno):
        heads = [r[2] for r in rows]
        try:
            if trees:
                check_heads(heads)
            elif not all(0 <= h <= len(heads) for h in heads):
                raise ValueError(f"head out of range for {len(heads)} words")
        except ValueError as e:
            raise TreeFormatError(str(e), path, lineno) from None
        return Tree([r[0] for r in rows], [r[1] for r in rows], heads=heads, relations=[r[3] for r in rows],
                    line=lineno)

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


def write_conllu(path: str, words: Sequence[Sequence[str]], heads: Sequence[Sequence[int]],
                 tags: Optional[Sequence[Sequence[str]]] = None, upos: Optional[Sequence[Sequence[str]]] = None,
                 relations: Optional[Sequence[Sequence[str]]] = None, blank_after_last: bool = False) -> None:
    """Sentences as CoNLL-U (:func:`conllu_lines`, ``sent_id`` = 1-based sentence number), written atomically.

    Sentences are separated by a blank line; ``blank_after_last`` also ends the file with one (the CoNLL-U
    standard; the unsupervised evaluation's files have always been written without it)."""
    if len(words) != len(heads):
        raise ValueError(f"{len(words)} sentences vs {len(heads)} head lists")

    def pick(column, k):
        return column[k] if column is not None else None

    blocks = ["\n".join(conllu_lines(w, h, pick(tags, k), str(k + 1), pick(upos, k), pick(relations, k))) + "\n"
              for k, (w, h) in enumerate(zip(words, heads))]
    atomic_write_text(path, "\n".join(blocks) + ("\n" if blank_after_last and blocks else ""))
