"""The unsupervised-evaluation view of a treebank: :class:`GoldSentence`, a tree restricted to its *words*.

A leaf is a word when its POS tag is in :data:`fairseq_tree.data.induction_text.WORD_TAGS` (punctuation, ``$``,
``#`` and ``-NONE-`` go); spans, labeled nodes and dependency heads are recomputed over the kept words. The rules
(which spans count, how heads of dropped tokens climb) are :mod:`fairseq_tree.evaluation.unsupervised`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

from fairseq_tree.text.normalize import WORD_TAGS, normalize_word, word_positions
from fairseq_tree.trees.brackets import plain_word, read_treebank
from fairseq_tree.trees.conllu import read_conllu
from fairseq_tree.trees.tree import ROOT_LABEL, LabeledSpan, Span, Tree, TreeFormatError, post_order


@dataclass
class GoldSentence:
    """One gold sentence restricted to its n kept words (0-based word k = kept leaf k).

    words:     [n] normalised words (``normalize_word``: lower-cased, digits -> ``N``), as the models see them.
    raw_words: [n] the surface words of the treebank.
    tags:      [n] their POS tags (all in WORD_TAGS).
    spans:     distinct unlabeled spans (i, j), j - i >= 2, in post-order (sorted by (j, -i)); for n >= 2 the
               whole-sentence span (0, n) is included (the scorer drops it).
    labeled:   (i, j, label) for every gold node over >= 2 kept words (a multiset, unary chains give one entry
               per label, the whole-sentence span included); the ``ROOT`` wrapper of a multi-tree line is not.
    heads:     [n] gold heads over the kept words (1-based, 0 root), or None without a dependency file.
    line:      line of the .mrg file where the tree starts; index: 0-based sentence number in the file.
    positions: [n] where the kept words are among the tree's tokens (``-NONE-`` removed); tokens: their number.
    """

    words: List[str]
    raw_words: List[str]
    tags: List[str]
    spans: List[Span]
    labeled: List[LabeledSpan]
    heads: Optional[List[int]] = None
    line: int = 0
    index: int = 0
    positions: Optional[List[int]] = None
    tokens: int = 0

    def __len__(self) -> int:
        return len(self.words)


def gold_from_tree(tree: Tree, lowercase: bool = True, digits: bool = True) -> GoldSentence:
    """Restrict a tree read with ``unary="join"`` (chain labels joined by ``+``) to its words.

    ``keep_before[p]`` counts the kept leaves before leaf p, so a node (s, e) covers kept words
    ``keep_before[s] .. keep_before[e]`` (half-open).
    """
    kept = word_positions(tree.tags)
    keep_before = [0]
    for t in tree.tags:
        keep_before.append(keep_before[-1] + (t in WORD_TAGS))
    labeled: List[LabeledSpan] = []
    for (s, e), label in zip(tree.spans, tree.labels):
        a, b = keep_before[s], keep_before[e]
        if b - a < 2:
            continue
        for part in label.split("+"):  # a collapsed unary chain: every label of the chain counts
            if part != ROOT_LABEL:
                labeled.append((a, b, part))
    spans = post_order((keep_before[s], keep_before[e]) for s, e in tree.spans
                        if keep_before[e] - keep_before[s] >= 2)
    return GoldSentence(
        words=[normalize_word(tree.words[p], lowercase, digits) for p in kept],
        raw_words=[tree.words[p] for p in kept], tags=[tree.tags[p] for p in kept], spans=spans,
        labeled=labeled, positions=kept, tokens=len(tree.words))


def project_heads(heads: Sequence[int], kept: Sequence[int]) -> List[int]:
    """Heads over all tokens (1-based, 0 root) -> heads over the kept tokens (0-based positions ``kept``).

    A kept token whose head is dropped climbs to the nearest kept ancestor (0 if none). Shape [len(kept)].
    """
    new_index = {p + 1: k + 1 for k, p in enumerate(kept)}  # old 1-based id -> new 1-based id
    out = []
    for p in kept:
        h = heads[p]
        while h != 0 and h not in new_index:
            h = heads[h - 1]  # acyclic: read_conllu checked the tree
        out.append(new_index.get(h, 0))
    return out


def same_token(a: str, b: str) -> bool:
    """Same word once the PTB escapes are undone (a dependency file's forms vs tree leaves: ``-LRB-``, ``\\/``)."""
    return plain_word(a) == plain_word(b)


def read_gold(mrg_path: str, conllu_path: Optional[str] = None, lowercase: bool = True,
              digits: bool = True) -> List[GoldSentence]:
    """Gold records of a (multi-line) .mrg treebank, with gold heads from a .conllu / .conll file aligned
    sentence by sentence (sentence i of the dependency file belongs to tree i).

    The dependency file must hold the tree's leaves (``-NONE-`` removed) in order, compared with ``-LRB-``
    etc. unescaped; the kept words are chosen by the *treebank's* tags. A mismatch raises
    :class:`TreeFormatError` naming both files, the sentence number and the .mrg line.
    """
    deps = iter(read_conllu(conllu_path)) if conllu_path is not None else None
    out: List[GoldSentence] = []
    for k, (line, tree) in enumerate(read_treebank(mrg_path, unary="join")):
        g = gold_from_tree(tree, lowercase, digits)
        g.line, g.index = line, k
        if deps is not None:
            dep = next(deps, None)
            where = f"sentence {k + 1} ({mrg_path}:{line})"
            if dep is None:
                raise TreeFormatError(f"{conllu_path} ends before {where}", conllu_path)
            if len(dep.words) != len(tree.words) or not all(map(same_token, dep.words, tree.words)):
                diff = next((i for i, (a, b) in enumerate(zip(dep.words, tree.words)) if not same_token(a, b)),
                            min(len(dep.words), len(tree.words)))
                raise TreeFormatError(
                    f"sentence {k + 1} does not align with {where}: {len(dep.words)} vs {len(tree.words)} "
                    f"tokens, first difference at token {diff + 1}", conllu_path)
            g.heads = project_heads(dep.heads, word_positions(tree.tags))
        out.append(g)
    if deps is not None and next(deps, None) is not None:
        raise TreeFormatError(f"more sentences than the {len(out)} trees of {mrg_path}", conllu_path)
    return out
