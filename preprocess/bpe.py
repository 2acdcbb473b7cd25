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

SEPARATOR = "@@"
_EOW = "</w>"
_NO_RANK = np.iinfo(np.int64).max


def learn_codes(word_counts: Counter, num_merges: int, out_path: str, min_frequency: int = 2) -> None:
    """Learn ``num_merges`` BPE merges from ``word -> count`` and write subword-nmt codes."""
    from subword_nmt import learn_bpe as learn_module

    from preprocess.progress import iterate

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
    """

    def __init__(self, bpe, separator: str = SEPARATOR):
        if bpe.version not in ((0, 1), (0, 2)):
            raise NotImplementedError(f"BPE codes version {bpe.version}")
        self.version, self.separator = bpe.version, separator
        self.ids: Dict[str, int] = {}
        self.symbols: List[str] = []
        self._eow = self._id(_EOW)
        codes = bpe.bpe_codes.items()  # (left, right) -> rank, the first of duplicates kept
        bits = max(8, (4 * len(bpe.bpe_codes)).bit_length())
        self._shift = np.uint64(64 - bits)
        self._mask = (1 << bits) - 1
        self.table_keys = np.full(1 << bits, -1, dtype=np.int64)  # [slots] pair key, -1 = empty
        self.table_rank = np.zeros(1 << bits, dtype=np.int64)  # [slots]
        self.table_result = np.zeros(1 << bits, dtype=np.int64)  # [slots] id of the merged symbol
        for (a, b), rank in codes:
            key = self._key(self._id(a), self._id(b))
            slot = int(self._hash(np.asarray([key], dtype=np.int64))[0])
            while self.table_keys[slot] != -1:
                slot = (slot + 1) & self._mask
            self.table_keys[slot], self.table_rank[slot], self.table_result[slot] = key, rank, self._id(a + b)
        self._grow()

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

    def _grow(self) -> None:
        """Display forms of all symbols: inner pieces with the separator, final pieces without ``</w>``."""
        self.inner = np.asarray([s + self.separator for s in self.symbols] + [None], dtype=object)
        self.final = np.asarray([s[:-4] if s.endswith(_EOW) else s for s in self.symbols] + [None], dtype=object)
        self.plain = np.asarray(self.symbols + [None], dtype=object)

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
        """The pieces of every word (non-empty strings), with the separator on all but the last."""
        out: List[Optional[List[str]]] = [None] * len(words)
        long_words = [k for k, w in enumerate(words) if len(w) > 1]
        for k, w in enumerate(words):
            if len(w) == 1:  # subword-nmt leaves 1-character words alone
                out[k] = [w]
        if not long_words:
            return out  # type: ignore[return-value]
        sym, lengths = self._initial([words[k] for k in long_words])
        index = np.asarray(long_words, dtype=np.int64)  # [words] position of each active word in ``words``
        while len(index):
            sym, lengths, index = self._round(sym, lengths, index, out)
        return out  # type: ignore[return-value]

    def _round(self, sym, lengths, index, out):
        """One merge step for every active word; finished words are written to ``out`` and dropped."""
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
        done = best == _NO_RANK
        if done.any():
            self._finish(sym, starts[done], lengths[done], index[done], out)
        occ = (rank == np.repeat(best, lengths)) & hit  # [symbols] occurrences of the word's best pair
        # overlapping occurrences (x x x) form runs; left to right, every other one merges
        at = np.arange(n)
        run_start = np.maximum.accumulate(np.where(occ & ~np.concatenate(([False], occ[:-1])), at, 0))
        take = occ & ((at - run_start) % 2 == 0)
        sym = sym.copy()
        sym[take] = self.table_result[slot[take]]
        taken = np.flatnonzero(take)
        keep = np.repeat(~done, lengths)  # [symbols] finished words leave the batch
        keep[taken + 1] = False  # the right half of a merged pair
        word_of = np.repeat(np.arange(len(lengths)), lengths)
        lengths = lengths - np.bincount(word_of[taken], minlength=len(lengths))
        return sym[keep], lengths[~done], index[~done]

    def _finish(self, sym, starts, lengths, index, out) -> None:
        """Pieces of finished words (a final bare ``</w>`` dropped, as subword-nmt does)."""
        if len(self.inner) != len(self.symbols) + 1:
            self._grow()
        bare = sym[starts + lengths - 1] == self._eow  # [words] version 0.1: "... x </w>" -> "... x"
        lengths = lengths - bare
        offsets = np.cumsum(lengths) - lengths  # [words] start of each word in the output
        sel = np.arange(lengths.sum()) + np.repeat(starts - offsets, lengths)  # [pieces] positions in sym
        ids = sym[sel]
        is_final = np.zeros(len(ids), dtype=bool)
        is_final[offsets + lengths - 1] = True
        final = self.final[ids]
        if bare.any():  # after a dropped "</w>", subword-nmt leaves the new last piece as it is
            final[offsets[bare] + lengths[bare] - 1] = self.plain[ids[offsets[bare] + lengths[bare] - 1]]
        flat = np.where(is_final, final, self.inner[ids]).tolist()
        for b, l, k in zip(offsets.tolist(), lengths.tolist(), index.tolist()):
            out[k] = flat[b:b + l]


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
            cache[w] = pieces if len(pieces) > 1 else [w]

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
