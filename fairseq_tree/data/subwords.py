"""A pretrained encoder's input for the LAL parser: a batch of word lists -> the encoder's subword rows and the
offsets that pool subwords back to words, computed once per batch in the collater (the model only gathers).

``SubwordBatcher(tokenizer, max_length)(sentences, T)`` with a HuggingFace tokenizer (any that takes
``is_split_into_words=True`` and reports ``word_ids``) returns, for B sentences of n_b words and the parser's
T = max n_b + 2 token positions (BOS, words, EOS)::

    pt_tokens [R, S]  subword ids, one row per chunk (R >= B), each chunk wrapped in the tokenizer's own special
                      tokens (BERT: [CLS] .. [SEP]; XLNet: .. <sep> <cls>; RoBERTa: <s> .. </s>), right-padded
    pt_mask   [R, S]  1 on real subwords and specials, 0 on padding
    pt_word   [R, S]  the parser token each subword belongs to, as b * T + t (t = 1..n_b for word t), -1 for none
    pt_first  [B, T]  flat index r * S + s of the first subword of token (b, t), -1 when it has none
    pt_last   [B, T]  the same, last subword

BOS (t = 0) is given the template's ``cls`` special of the sentence's first chunk and EOS (t = n_b + 1) its ``sep``
special of the last chunk (the first / last special when the tokenizer names no cls / sep), as Kitaev's and the
LAL authors' code feed START/STOP: so every parser token but padding has a vector. A word the tokenizer turns into
no subword at all (BERT strips a zero-width space ``\\u200b``; XLNet's sentencepiece a lone space) has -1: the model
gives it a learned vector of its own (``PretrainedWordEncoder.empty``).

Long sentences: a sentence whose subwords, with the specials, exceed ``max_length`` is split at word boundaries
into consecutive chunks of at most ``max_length`` subwords, each encoded on its own, and rejoined here through the
offsets (nothing is truncated; only a single word longer than a whole chunk keeps its first subwords, with a
warning).
"""

import logging
from typing import Dict, List, Sequence

import torch
from torch import Tensor

logger = logging.getLogger(__name__)


def special_template(tokenizer):
    """-> (prefix ids, suffix ids) that the tokenizer wraps one sequence in (found by tokenizing a probe word with
    and without special tokens; no ``build_inputs_with_special_tokens``, which transformers 5 dropped)."""
    plain = tokenizer(["a"], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    full = tokenizer(["a"], is_split_into_words=True, add_special_tokens=True)["input_ids"]
    for k in range(len(full) - len(plain) + 1):
        if full[k:k + len(plain)] == plain:
            return list(full[:k]), list(full[k + len(plain):])
    raise ValueError(f"{type(tokenizer).__name__}: cannot find the special-token template around {plain} in {full}")


class SubwordBatcher:
    """Words -> subword chunks and pooling offsets (see the module docstring). Callable: (sentences, T) -> dict."""

    def __init__(self, tokenizer, max_length: int):
        self.tokenizer = tokenizer
        self.prefix, self.suffix = special_template(tokenizer)
        template = self.prefix + self.suffix
        self.body = int(max_length) - len(template)
        if self.body < 1:
            raise ValueError(f"--pretrained-max-length {max_length} leaves no room beside {len(template)} specials")
        pad = tokenizer.pad_token_id
        self.pad_id = 0 if pad is None else int(pad)

        def where(token_id, fallback):
            return template.index(token_id) if token_id is not None and token_id in template else fallback

        # template positions (0 .. len(template) - 1, prefix then suffix) whose vectors stand for BOS and EOS
        self.bos_at = where(tokenizer.cls_token_id, 0 if template else None)
        self.eos_at = where(tokenizer.sep_token_id, len(template) - 1 if template else None)

    def _chunks(self, pieces: List[List[int]]) -> List[List[int]]:
        """Word indices per chunk: consecutive words, at most ``body`` subwords each (a word is never cut)."""
        chunks, cur, size = [], [], 0
        for w, p in enumerate(pieces):
            if len(p) > self.body:
                logger.warning("a word of %d subwords is longer than a chunk (%d): its first %d are kept",
                               len(p), self.body, self.body)
                del p[self.body:]
            if cur and size + len(p) > self.body:
                chunks.append(cur)
                cur, size = [], 0
            cur.append(w)
            size += len(p)
        chunks.append(cur)
        return chunks

    def __call__(self, sentences: Sequence[Sequence[str]], T: int) -> Dict[str, Tensor]:
        B = len(sentences)
        enc = self.tokenizer([list(s) for s in sentences], is_split_into_words=True, add_special_tokens=False)
        rows: List[List[int]] = []
        owners: List[List[int]] = []
        np_, ns = len(self.prefix), len(self.suffix)
        for b, words in enumerate(sentences):
            pieces: List[List[int]] = [[] for _ in words]
            for i, w in zip(enc["input_ids"][b], enc.word_ids(b)):
                if w is not None:
                    pieces[w].append(i)
            chunks = self._chunks(pieces)
            for c, chunk in enumerate(chunks):
                body = [i for w in chunk for i in pieces[w]]
                own = [b * T + w + 1 for w in chunk for _ in pieces[w]]
                special = [-1] * (np_ + ns)
                if c == 0 and self.bos_at is not None:
                    special[self.bos_at] = b * T
                if c == len(chunks) - 1 and self.eos_at is not None:
                    special[self.eos_at] = b * T + len(words) + 1
                rows.append(self.prefix + body + self.suffix)
                owners.append(special[:np_] + own + special[np_:])
        R, S = len(rows), max(len(r) for r in rows)
        tokens = torch.full((R, S), self.pad_id, dtype=torch.long)
        word = torch.full((R, S), -1, dtype=torch.long)
        for r, (row, own) in enumerate(zip(rows, owners)):
            tokens[r, :len(row)] = torch.tensor(row, dtype=torch.long)
            word[r, :len(own)] = torch.tensor(own, dtype=torch.long)
        mask = torch.zeros(R, S, dtype=torch.long)
        for r, row in enumerate(rows):
            mask[r, :len(row)] = 1
        flat, pos = word.view(-1), torch.arange(R * S)
        valid = flat >= 0
        first = torch.full((B * T,), R * S, dtype=torch.long).scatter_reduce(0, flat[valid], pos[valid], "amin")
        last = torch.full((B * T,), -1, dtype=torch.long).scatter_reduce(0, flat[valid], pos[valid], "amax")
        first = first.masked_fill(first.eq(R * S), -1)
        return {"pt_tokens": tokens, "pt_mask": mask, "pt_word": word,
                "pt_first": first.view(B, T), "pt_last": last.view(B, T)}


__all__ = ["SubwordBatcher", "special_template"]
