"""One sentence per sample, masked for a masked LM: the data of the ``tree_induction`` task.

A sample is ``<s> w_1 .. w_n </s>`` (``fairseq-preprocess`` appends ``</s>``; BOS is prepended here). The
structure models (constituent attention, StructFormer) see BOS and EOS explicitly and keep them out of every
tree; sentences are never packed into blocks, so a tree never spans two sentences.

Masking (:class:`MaskPolicy`): ``num = floor(p * n + u)`` (u ~ U[0,1), so E[num] = p * n, as fairseq's
``MaskTokensDataset``) of the n word positions that are not ``<unk>`` are chosen; each chosen token is left
unchanged with probability ``leave_unmasked``, replaced by a random word (not a special symbol, not
``<mask>``) with probability ``random_token``, and replaced by ``<mask>`` otherwise. BOS, EOS, padding and
``<unk>`` are never chosen. ``sampling="bernoulli"`` chooses each candidate independently with probability p
(the authors' Tree Transformer code: ``randint(0, 6) == 0`` per position, so a sentence may have none), and
``bos_unk=True`` lets BOS and ``<unk>`` be chosen (their ``[CLS]`` and ``[UNK]`` are ordinary tokens to their
masking). The random stream is seeded by (seed, epoch, sample index), so a sample is masked
identically however it is batched, and validation masks are the same at every validation.
"""

from dataclasses import dataclass
from typing import List, Optional

import numpy as np
import torch
from fairseq.data import Dictionary, FairseqDataset, data_utils

MASK_SAMPLING = ("count", "bernoulli")


@dataclass
class MaskPolicy:
    """``prob``: fraction of words chosen; of those, ``leave_unmasked`` are kept and ``random_token`` replaced by
    a random word (BERT: 0.15 / 0.1 / 0.1; StructFormer: 0.3 / 0 / 0, always ``<mask>``)."""

    prob: float = 0.15
    leave_unmasked: float = 0.1
    random_token: float = 0.1
    sampling: str = "count"
    bos_unk: bool = False

    def check(self) -> None:
        if not 0.0 <= self.prob <= 1.0:
            raise ValueError(f"--mask-prob must lie in [0, 1], got {self.prob}")
        if self.leave_unmasked < 0 or self.random_token < 0 or self.leave_unmasked + self.random_token > 1:
            raise ValueError(f"--leave-unmasked-prob + --random-token-prob must lie in [0, 1], got "
                             f"{self.leave_unmasked} + {self.random_token}")
        if self.sampling not in MASK_SAMPLING:
            raise ValueError(f"--mask-sampling must be one of {MASK_SAMPLING}, got {self.sampling!r}")


def mask_sentence(tokens: np.ndarray, dictionary: Dictionary, mask_idx: int, policy: MaskPolicy,
                  rng: np.random.Generator):
    """tokens [T] int (``<s> w.. </s>``) -> (masked tokens [T], target [T] with the original token at chosen
    positions and pad elsewhere)."""
    special = np.zeros(len(tokens), dtype=bool)
    never = (dictionary.eos(), dictionary.pad()) if policy.bos_unk else \
        (dictionary.eos(), dictionary.pad(), dictionary.unk(), dictionary.bos())
    for s in never:
        special |= tokens == s
    candidates = np.flatnonzero(~special)
    target = np.full_like(tokens, dictionary.pad())
    masked = tokens.copy()
    if policy.sampling == "bernoulli":
        chosen = candidates[rng.random(len(candidates)) < policy.prob]
    else:
        chosen = rng.choice(candidates, size=int(policy.prob * len(candidates) + rng.random()), replace=False)
    num = len(chosen)
    if num == 0:
        return masked, target
    target[chosen] = tokens[chosen]
    u = rng.random(num)
    to_mask = u >= policy.leave_unmasked + policy.random_token
    to_random = (u >= policy.leave_unmasked) & ~to_mask
    masked[chosen[to_mask]] = mask_idx
    if to_random.any():
        # random replacements are words: skip the specials (fairseq's nspecial first entries) and <mask>
        low = dictionary.nspecial
        r = rng.integers(low, len(dictionary) - 1, size=int(to_random.sum()))
        r[r >= mask_idx] += 1  # uniform over the words other than <mask>
        masked[chosen[to_random]] = r
    return masked, target


class MaskedSentenceDataset(FairseqDataset):
    """Wraps a dataset of token tensors ``w_1 .. w_n </s>`` (as written by ``fairseq-preprocess``).

    Sample dict: ``id``, ``source`` (original ``<s> w.. </s>``), ``masked``, ``target``. Collated batch:
    ``net_input.src_tokens`` [B, T] masked, right-padded; ``net_input.src_lengths`` [B]; ``target`` [B, T]
    (pad where not predicted, for fairseq's ``masked_lm`` criterion); ``original_tokens`` [B, T] unmasked
    (for parsing at validation); ``ntokens`` = number of predicted tokens.

    ``policy`` is read at every ``__getitem__`` (the task may resolve per-model defaults after the dataset
    is built). ``tag``, if given, is copied into every batch (the task marks its treebank batches). ``unsorted``:
    :meth:`ordered_indices` is a permutation drawn from (seed, epoch), so batches hold sentences of any length
    (the authors' Tree Transformer code); otherwise sentences are ordered by length, as fairseq's datasets.
    """

    def __init__(self, tokens: FairseqDataset, dictionary: Dictionary, mask_idx: int, policy: MaskPolicy,
                 seed: int = 1, tag: Optional[str] = None, unsorted: bool = False):
        super().__init__()
        self.tag = tag
        self.unsorted = unsorted
        self.tokens = tokens
        self.dictionary = dictionary
        self.mask_idx = mask_idx
        self.policy = policy
        self.seed = seed
        self.epoch = 1
        sizes = tokens.sizes if hasattr(tokens, "sizes") else [len(t) for t in tokens]
        self._sizes = np.asarray(sizes) + 1  # + BOS

    def set_epoch(self, epoch, **unused):
        self.epoch = epoch

    @property
    def can_reuse_epoch_itr_across_epochs(self):
        return False  # masks depend on the epoch

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, index):
        body = self.tokens[index]
        source = torch.cat([body.new_tensor([self.dictionary.bos()]), body])
        rng = np.random.default_rng((self.seed, self.epoch, index))
        masked, target = mask_sentence(source.numpy(), self.dictionary, self.mask_idx, self.policy, rng)
        return {"id": index, "source": source, "masked": torch.from_numpy(masked),
                "target": torch.from_numpy(target)}

    @property
    def sizes(self):
        return self._sizes

    def num_tokens(self, index):
        return int(self._sizes[index])

    def size(self, index):
        return int(self._sizes[index])

    def ordered_indices(self):
        if self.unsorted:  # a stream apart from the masks' (seed, epoch, index < 2**62)
            return np.random.default_rng((self.seed, self.epoch, 2**62)).permutation(len(self))
        return np.lexsort((np.arange(len(self)), self._sizes))  # by length, ties by index

    @property
    def supports_prefetch(self):
        return getattr(self.tokens, "supports_prefetch", False)

    def prefetch(self, indices):
        self.tokens.prefetch(indices)

    def collater(self, samples: List[dict]) -> Optional[dict]:
        if not samples:
            return {}
        pad = self.dictionary.pad()

        def coll(key):
            return data_utils.collate_tokens([s[key] for s in samples], pad, left_pad=False)

        target = coll("target")
        batch = {
            "id": torch.LongTensor([s["id"] for s in samples]),
            "nsentences": len(samples),
            "ntokens": int(target.ne(pad).sum()),
            "net_input": {"src_tokens": coll("masked"),
                          "src_lengths": torch.LongTensor([len(s["source"]) for s in samples])},
            "target": target,
            "original_tokens": coll("source"),
        }
        if self.tag is not None:
            batch["tag"] = self.tag
        return batch
