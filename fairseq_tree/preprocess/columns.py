"""A shard's sentences as columns: flat int arrays plus per-sentence sizes, for the bpe and binarize stages.

A *column* is one field of every sentence of a shard: ``ids`` [total] (the items of all sentences,
concatenated) and ``sizes`` [sentences]. Strings are interned into a shard-local vocabulary (``Vocab``) so that
splitting words into pieces, expanding trees and binarizing are numpy operations over the whole shard instead
of Python loops over sentences. Only word *types* are handled one at a time (their pieces).

On disk (``SHARD.bpe.npz``), the bpe stage's output: ``lineno`` [kept]; ``leaves``/``leaf_sizes`` (piece ids);
``nodes``/``node_sizes`` (label ids, post-order); ``spans`` [2 * nodes] (int32, half-open, flattened);
``tgt``/``tgt_sizes`` (piece ids, no EOS); ``pieces`` and ``labels``: the vocabularies, newline-joined UTF-8.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np


class Vocab:
    """Strings -> dense ids in order of first appearance (``strings[i]`` is the string of id ``i``)."""

    def __init__(self):
        self.ids: Dict[str, int] = {}
        self.strings: List[str] = []

    def __len__(self) -> int:
        return len(self.strings)

    def intern(self, tokens: Sequence[str]) -> np.ndarray:
        """Ids of ``tokens`` [n], adding new strings."""
        ids = self.ids
        try:  # the common case once the vocabulary is known: one pass
            return np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        except KeyError:
            pass
        for t in dict.fromkeys(tokens):  # new strings, in order of first appearance (one step per type)
            if t not in ids:
                ids[t] = len(self.strings)
                self.strings.append(t)
        return np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))


def strings_to_bytes(strings: Sequence[str]) -> np.ndarray:
    """Newline-joined UTF-8 [bytes] (strings hold no newline)."""
    return np.frombuffer("\n".join(strings).encode("utf-8"), dtype=np.uint8)


class PieceTable:
    """Word types -> their subword pieces as ids, filled one batch of new types at a time and kept for the
    worker's later shards (``segment`` is a :class:`fairseq_tree.text.bpe.Segmenter`). Grows with the
    vocabulary only."""

    def __init__(self, segment):
        self.segment = segment
        self.types, self.pieces = Vocab(), Vocab()
        self.length = np.zeros(0, np.int64)  # [types] pieces per type
        self.start = np.zeros(0, np.int64)  # [types] offset of the type's pieces in ``flat``
        self.flat = np.zeros(0, np.int64)  # piece ids of all types, concatenated
        self._display = np.zeros(0, np.int64)  # BatchBPE display id -> piece id (-1: not seen yet)

    def lookup(self, words: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """-> (piece ids [P], pieces per word [len(words)])."""
        known = len(self.types)
        type_ids = self.types.intern(words)
        if len(self.types) > known:
            self._add(self.types.strings[known:])
        k = self.length[type_ids]
        return ragged_gather(self.flat, self.start[type_ids], k), k

    def _add(self, new: List[str]) -> None:
        batch = self.segment.batch
        if batch is None:  # no BPE: every word is its one piece
            length, flat = np.ones(len(new), np.int64), self.pieces.intern(new)
        else:
            display, length = batch.encode_ids(new)  # [pieces], [new types]
            flat = self._piece_ids(batch, display)
        self.start = np.concatenate([self.start, len(self.flat) + starts_of(length)])
        self.length = np.concatenate([self.length, length])
        self.flat = np.concatenate([self.flat, flat])

    def _piece_ids(self, batch, display: np.ndarray) -> np.ndarray:
        """Piece ids of BatchBPE display ids [pieces]; the strings of display ids not seen before are built (once
        per piece type)."""
        if len(self._display) < 3 * len(batch.symbols):
            grown = np.full(3 * len(batch.symbols), -1, np.int64)
            grown[:len(self._display)] = self._display
            self._display = grown
        new = np.unique(display[self._display[display] < 0])
        if len(new):
            self._display[new] = self.pieces.intern([batch.piece(i) for i in new.tolist()])
        return self._display[display]


def vocab_from_bytes(data: np.ndarray) -> List[str]:
    """Inverse of :func:`strings_to_bytes` (no strings and one empty string both give ``[""]``; the ids decide
    which)."""
    return bytes(data).decode("utf-8").split("\n")


def read_parsed(path: str, width: int = 8) -> List[List[str]]:
    """The columns [width][rows] of a stage-1 ``.parsed.tsv`` (rows of ``width`` tab-separated fields), rows
    marked as skipped (last field) left out. Split as one string: no loop over rows."""
    with open(path, encoding="utf-8") as f:
        flat = f.read().replace("\n", "\t").split("\t")
    n = (len(flat) - 1) // width
    if len(flat) != n * width + 1 or flat[-1]:
        raise ValueError(f"{path}: not rows of {width} tab-separated fields")
    cols = [flat[c:n * width:width] for c in range(width)]
    if any(cols[-1]):
        kept = [i for i, e in enumerate(cols[-1]) if not e]
        cols = [[c[i] for i in kept] for c in cols]
    return cols


def split_column(fields: Sequence[str], empty_is_none: bool = True) -> Tuple[List[str], np.ndarray]:
    """Space-separated fields -> (tokens [total], sizes [fields]). An empty field has no token, or with
    ``empty_is_none=False`` one empty token (as ``"".split(" ")``)."""
    text = "\n".join(fields)
    sizes = field_sizes(text, len(fields), empty_is_none)
    if empty_is_none and not sizes.all():
        text = "\n".join(f for f in fields if f)
    return (text.replace("\n", " ").split(" ") if sizes.any() else []), sizes


def field_sizes(text: str, n: int, empty_is_none: bool) -> np.ndarray:
    """Tokens per field of ``n`` newline-joined space-separated fields [n], counted on the UTF-8 bytes (a space
    or newline byte is never part of a longer character)."""
    b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    ends = np.concatenate([np.flatnonzero(b == 10), [len(b)]]) if n else np.zeros(0, np.int64)  # [n]
    spaces = np.concatenate([[0], np.cumsum(b == 32)])[ends]  # spaces before each field's end
    lengths = np.diff(np.concatenate([[-1], ends])) - 1  # characters (bytes) per field
    sizes = np.diff(np.concatenate([[0], spaces])) + 1
    return np.where(lengths > 0, sizes, 0 if empty_is_none else 1).astype(np.int64)


def starts_of(sizes: np.ndarray) -> np.ndarray:
    """Offset of every item's first element in the concatenation [len(sizes)]."""
    return np.cumsum(sizes) - sizes


def ragged_gather(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concat(values[s:s + l] for s, l in zip(starts, lengths))`` [lengths.sum()]."""
    total = int(lengths.sum())
    index = np.arange(total) + np.repeat(starts - starts_of(lengths), lengths)
    return values[index]


def owner(sizes: np.ndarray) -> np.ndarray:
    """The item each element of the concatenation belongs to [sizes.sum()]."""
    return np.repeat(np.arange(len(sizes)), sizes)


def expand_trees(word_sizes: np.ndarray, pieces_per_word: np.ndarray, tag_ids: np.ndarray,
                 node_sizes: np.ndarray, node_ids: np.ndarray, spans: np.ndarray):
    """:func:`fairseq_tree.trees.expand_subwords` for every sentence at once.

    word_sizes [S] words per sentence; pieces_per_word [W] and tag_ids [W] per word; node_sizes [S], node_ids [M]
    and spans [M, 2] (word positions, post-order) per node. A word of k > 1 pieces becomes a node labelled with
    its tag over its pieces; spans move to piece positions; every sentence's nodes are put back in post-order
    (end, then -start). Returns (node_sizes [S], node_ids [M'], spans [M', 2]) in piece positions.
    """
    # piece position of every word boundary: before[g] = pieces of the sentence's words before word g
    cum = np.concatenate(([0], np.cumsum(pieces_per_word)))  # [W + 1]
    word_start = starts_of(word_sizes)  # [S]
    node_sent = owner(node_sizes)  # [M]
    base = word_start[node_sent]
    moved = cum[base[:, None] + spans] - cum[base][:, None]  # [M, 2]
    split = np.flatnonzero(pieces_per_word > 1)  # words that become nodes
    split_sent = owner(word_sizes)[split]
    new = np.stack([cum[split], cum[split + 1]], axis=1) - cum[word_start[split_sent]][:, None]  # [B, 2]
    # merge into post-order: a word's node goes before the first node of its sentence that ends with or after
    # it (the sentence's nodes are in post-order: ends never decrease)
    big = int(cum[-1]) + 1
    at = np.searchsorted(node_sent * big + moved[:, 1], split_sent * big + new[:, 1])  # [B] insertion points
    out_new = at + np.arange(len(split))  # [B] places in the merged order
    out_old = np.arange(len(node_ids)) + np.searchsorted(at, np.arange(len(node_ids)), side="right")  # [M]
    all_spans = np.empty((len(node_ids) + len(split), 2), np.int64)
    all_spans[out_old], all_spans[out_new] = moved, new
    ids = np.empty(len(node_ids) + len(split), np.int64)
    ids[out_old], ids[out_new] = node_ids, tag_ids[split]
    sizes = node_sizes + np.bincount(split_sent, minlength=len(node_sizes))
    return sizes, ids, all_spans
