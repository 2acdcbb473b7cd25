"""Subword segmentation with subword-nmt: learn codes on the training words, split words into pieces.

Codes are learned jointly on the source and target words of the training split only (counts in, no
text file of the corpus needed), so ``--joined-dictionary`` works out of the box.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import List, Optional

SEPARATOR = "@@"


def learn_codes(word_counts: Counter, num_merges: int, out_path: str, min_frequency: int = 2) -> None:
    """Learn ``num_merges`` BPE merges from ``word -> count`` and write subword-nmt codes."""
    from subword_nmt import learn_bpe as learn_module

    learn_module.tqdm = lambda iterable, *args, **kwargs: iterable  # no per-merge progress bar in our logs
    # subword-nmt reads "word count" lines when is_dict=True; sorted for a deterministic result
    vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in sorted(word_counts.items())))
    with open(out_path, "w", encoding="utf-8") as out:
        learn_module.learn_bpe(vocab, out, num_merges, min_frequency=min_frequency, is_dict=True)


class Segmenter:
    """``segmenter(word) -> pieces``; identity when ``codes_path`` is None."""

    def __init__(self, codes_path: Optional[str]):
        self.bpe = None
        self.cache: dict = {}
        if codes_path is not None:
            from subword_nmt.apply_bpe import BPE

            with open(codes_path, encoding="utf-8") as f:
                self.bpe = BPE(f, separator=SEPARATOR)

    def __call__(self, word: str) -> List[str]:
        pieces = self.cache.get(word)
        if pieces is None:
            pieces = self._segment(word)
        return pieces

    def _segment(self, word: str) -> List[str]:
        pieces = [word] if self.bpe is None else self.bpe.segment_tokens([word])
        self.cache[word] = pieces
        return pieces

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

