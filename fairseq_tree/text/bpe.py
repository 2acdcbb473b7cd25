"""Subword segmentation with subword-nmt: learn codes on the training words, split words into pieces.

Codes are learned jointly on the source and target words of the training split only (counts in, no
text file of the corpus needed), so ``--joined-dictionary`` works out of the box.

Applying codes is done per word *type*: :meth:`Segmenter.prepare` segments a batch of new types at once
(:class:`BatchBPE`, numpy, the same merges as subword-nmt's ``encode``) into a cache that later sentences
read; no sentence is ever segmented as a whole.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import Dict, Iterable, List, Optional

import numpy as np

from fairseq_tree.utils.progress import iterate

SEPARATOR = "@@"
_EOW = "</w>"
_NO_RANK = np.iinfo(np.int64).max


def learn_codes(word_counts: Counter, num_merges: int, out_path: str, min_frequency: int = 2) -> None:
    """Learn ``num_merges`` BPE merges from ``word -> count`` and write subword-nmt codes."""
    from subword_nmt import learn_bpe as learn_module

    # subword-nmt's loop over merges, with our progress (a bar on a terminal, a log line every 10 s otherwise)
    learn_module.tqdm = lambda merges, *args, **kwargs: iterate(merges, "learn bpe", len(merges), "merge")
    # subword-nmt reads "word count" lines when is_dict=True; sorted for a deterministic result
    vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in sorted(word_counts.items())))
    with open(out_path, "w", encoding="utf-8") as out:
        learn_module.learn_bpe(vocab, out, num_merges, min_frequency=min_frequency, is_dict=True)


class BatchBPE:
    """subword-nmt's ``encode`` (no glossaries, vocabulary or dropout) over many words at once.

    Per word, subword-nmt repeatedly merges every occurrence (left to right, ``x x x -> xx x``) of the
    adjacent pair with the lowest rank, until no pair is a code. Here every round does that step for all
    unfinished words together on flat int arrays of symbol ids; a word leaves the batch when it has no
    code pair left. Symbols are identified by their strings, as in subword-nmt; a code pair is found in an
    open-addressing hash table of ``left * 2**31 + right`` keys.

    A piece comes out as a *display id* ``3 * symbol + form``: form 0 is the symbol with the separator (not
    the word's last piece), 1 the last piece without ``</w>``, 2 the symbol as it is (a 1-character word, or
    the piece before a dropped bare ``</w>``); :meth:`piece` gives its string.
    """

    def __init__(self, bpe, separator: str = SEPARATOR):
        if bpe.version not in ((0, 1), (0, 2)):
            raise NotImplementedError(f"BPE codes version {bpe.version}")
        self.version, self.separator = bpe.version, separator
        self.ids: Dict[str, int] = {}
        self.symbols: List[str] = []
        self._eow = self._id(_EOW)
        codes = list(bpe.bpe_codes.items())  # (left, right) -> rank, the first of duplicates kept
        key = np.asarray([self._key(self._id(a), self._id(b)) for (a, b), _ in codes], dtype=np.int64)
        rank = np.asarray([r for _, r in codes], dtype=np.int64)
        result = np.asarray([self._id(a + b) for (a, b), _ in codes], dtype=np.int64)
        bits = max(8, (4 * len(codes)).bit_length())
        self._shift = np.uint64(64 - bits)
        self._mask = (1 << bits) - 1
        self.table_keys = np.full(1 << bits, -1, dtype=np.int64)  # [slots] pair key, -1 = empty
        self.table_rank = np.zeros(1 << bits, dtype=np.int64)  # [slots]
        self.table_result = np.zeros(1 << bits, dtype=np.int64)  # [slots] id of the merged symbol
        self._insert(key, rank, result)

    def _insert(self, key: np.ndarray, rank: np.ndarray, result: np.ndarray) -> None:
        """Linear probing for all keys at once: per round, each empty slot goes to the first key aiming at it,
        the others move one slot on (so every slot between a key's hash and its place is occupied)."""
        slot = self._hash(key)
        pending = np.arange(len(key))
        while len(pending):
            free = self.table_keys[slot[pending]] == -1
            slots, first = np.unique(slot[pending[free]], return_index=True)
            won = pending[free][first]
            self.table_keys[slots], self.table_rank[slots], self.table_result[slots] = key[won], rank[won], result[won]
            placed = np.zeros(len(key), dtype=bool)
            placed[won] = True
            pending = pending[~placed[pending]]
            slot[pending] = (slot[pending] + 1) & self._mask

    @staticmethod
    def _key(a, b):
        return a * (1 << 31) + b

    def _hash(self, key: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return ((key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> self._shift).astype(np.int64)

    def _id(self, symbol: str) -> int:
        i = self.ids.get(symbol)
        if i is None:
            i = self.ids[symbol] = len(self.symbols)
            self.symbols.append(symbol)
        return i

    def piece(self, display_id: int) -> str:
        """The string of a display id."""
        symbol, form = divmod(display_id, 3)
        s = self.symbols[symbol]
        if form == 0:
            return s + self.separator
        return s[:-4] if form == 1 and s.endswith(_EOW) else s

    def _lookup(self, key: np.ndarray):
        """-> (slot, found) per key: ``found[i]`` iff ``key[i]`` is a code, then at ``table_*[slot[i]]``."""
        slot = self._hash(key)
        found = np.zeros(len(key), dtype=bool)
        todo = np.arange(len(key))
        while len(todo):
            k = self.table_keys[slot[todo]]
            hit = k == key[todo]
            found[todo[hit]] = True
            todo = todo[~hit & (k != -1)]  # an occupied slot of another key: probe the next one
            slot[todo] = (slot[todo] + 1) & self._mask
        return slot, found

    def _initial(self, words: List[str]):
        """Symbol ids of the words' characters, the last one with ``</w>`` -> (ids [symbols], lengths [words])."""
        text = "".join(words)
        cp = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)  # [characters]
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        chars, inverse = np.unique(cp, return_inverse=True)
        plain = np.asarray([self._id(chr(c)) for c in chars.tolist()], dtype=np.int64)
        ends = np.cumsum(lengths) - 1
        if self.version == (0, 1):  # ... c </w>
            sym = plain[inverse]
            sym = np.insert(sym, ends + 1, self._eow)
            return sym, lengths + 1
        with_eow = np.asarray([self._id(chr(c) + _EOW) for c in chars.tolist()], dtype=np.int64)
        sym = plain[inverse]
        sym[ends] = with_eow[inverse[ends]]
        return sym, lengths

    def encode(self, words: List[str]) -> List[List[str]]:
        """The pieces of every (non-empty) word as strings, with the separator on all but the last."""
        ids, lengths = self.encode_ids(words)
        strings = [self.piece(i) for i in ids.tolist()]
        starts = (np.cumsum(lengths) - lengths).tolist()
        return [strings[b:b + n] for b, n in zip(starts, lengths.tolist())]

    def encode_ids(self, words: List[str]):
        """The pieces of every (non-empty) word -> (display ids [pieces], pieces per word [len(words)])."""
        n_chars = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        done: List[tuple] = []  # (word positions [w], pieces per word [w], display ids) as words finish
        short = np.flatnonzero(n_chars == 1)  # subword-nmt leaves 1-character words alone
        if len(short):
            ids = np.asarray([self._id(words[k]) for k in short.tolist()], dtype=np.int64)
            done.append((short, np.ones(len(short), np.int64), 3 * ids + 2))
        index = np.flatnonzero(n_chars > 1)  # [words] position of each active word in ``words``
        if len(index):
            sym, lengths = self._initial([words[k] for k in index.tolist()])
            while len(index):
                sym, lengths, index = self._round(sym, lengths, index, done)
        if not done:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        index, lengths, ids = (np.concatenate(x) for x in zip(*done))
        order = np.argsort(index, kind="stable")
        starts = np.cumsum(lengths) - lengths
        total = int(lengths.sum())
        sel = np.arange(total) + np.repeat(starts[order] - (np.cumsum(lengths[order]) - lengths[order]),
                                           lengths[order])
        return ids[sel], lengths[order]

    def _round(self, sym, lengths, index, done):
        """One merge step for every active word; finished words go to ``done`` and leave the batch."""
        n = len(sym)
        starts = np.cumsum(lengths) - lengths  # [words]
        last = np.zeros(n, dtype=bool)
        last[starts + lengths - 1] = True  # [symbols] the last symbol of its word: no pair to its right
        key = np.full(n, -2, dtype=np.int64)
        key[:-1] = self._key(sym[:-1], sym[1:])
        slot, hit = self._lookup(key)
        hit &= ~last
        rank = np.where(hit, self.table_rank[slot], _NO_RANK)  # [symbols] rank of the pair starting here
        best = np.minimum.reduceat(rank, starts)  # [words] the word's lowest rank
        finished = best == _NO_RANK
        if finished.any():
            done.append(self._finish(sym, starts[finished], lengths[finished], index[finished]))
        occ = (rank == np.repeat(best, lengths)) & hit  # [symbols] occurrences of the word's best pair
        # overlapping occurrences (x x x) form runs; left to right, every other one merges
        at = np.arange(n)
        run_start = np.maximum.accumulate(np.where(occ & ~np.concatenate(([False], occ[:-1])), at, 0))
        take = occ & ((at - run_start) % 2 == 0)
        sym = sym.copy()
        sym[take] = self.table_result[slot[take]]
        taken = np.flatnonzero(take)
        keep = np.repeat(~finished, lengths)  # [symbols] finished words leave the batch
        keep[taken + 1] = False  # the right half of a merged pair
        word_of = np.repeat(np.arange(len(lengths)), lengths)
        lengths = lengths - np.bincount(word_of[taken], minlength=len(lengths))
        return sym[keep], lengths[~finished], index[~finished]

    def _finish(self, sym, starts, lengths, index):
        """Display ids of finished words -> (positions, pieces per word, ids); a final bare ``</w>`` is
        dropped and the piece before it kept as it is, as subword-nmt does."""
        bare = sym[starts + lengths - 1] == self._eow  # [words] version 0.1: "... x </w>" -> "... x"
        lengths = lengths - bare
        offsets = np.cumsum(lengths) - lengths  # [words] start of each word in the output
        sel = np.arange(lengths.sum()) + np.repeat(starts - offsets, lengths)  # [pieces] positions in sym
        ids = 3 * sym[sel]
        ids[offsets + lengths - 1] += np.where(bare, 2, 1)
        return index, lengths, ids


class Segmenter:
    """``segmenter(word) -> pieces``; identity when ``codes_path`` is None.

    ``cache`` maps each word type seen to its pieces; :meth:`prepare` fills it for many types in one batch.
    """

    def __init__(self, codes_path: Optional[str]):
        self.bpe = None
        self.batch: Optional[BatchBPE] = None
        self.cache: dict = {}
        if codes_path is not None:
            from subword_nmt.apply_bpe import BPE

            with open(codes_path, encoding="utf-8") as f:
                self.bpe = BPE(f, separator=SEPARATOR)
            self.batch = BatchBPE(self.bpe, SEPARATOR)

    def __call__(self, word: str) -> List[str]:
        pieces = self.cache.get(word)
        if pieces is None:
            pieces = self._segment(word)
        return pieces

    def _segment(self, word: str) -> List[str]:
        pieces = [word] if self.bpe is None else self.bpe.segment_tokens([word])
        self.cache[word] = pieces
        return pieces

    def prepare(self, words: Iterable[str]) -> None:
        """Segment the word types among ``words`` that are not cached yet, in one batch."""
        cache = self.cache
        new = [w for w in set(words) if w and w not in cache]  # '' is left to _segment
        if not new:
            return
        if self.batch is None:
            cache.update((w, [w]) for w in new)
            return
        for w, pieces in zip(new, self.batch.encode(new)):
            cache[w] = pieces if len(pieces) > 1 else [w]  # (a word of one piece is that word)

    def split_words(self, words: List[str]) -> Optional[List[List[str]]]:
        """Pieces of every word, or None when no word is split (the common case, kept cheap)."""
        get = self.cache.get
        segs = [get(w) or self._segment(w) for w in words]
        for p in segs:
            if len(p) > 1:
                return segs
        return None

    def segment_tokens(self, tokens: List[str]) -> List[str]:
        segs = self.split_words(tokens)
        return tokens if segs is None else [p for ps in segs for p in ps]
