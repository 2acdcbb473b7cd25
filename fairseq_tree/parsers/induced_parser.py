"""Constituency trees induced without supervision by our own ``tree_induction`` checkpoints
(``constituent_transformer``, ``structformer``): ``--parser induced --parser-model CKPT``.

``InducedBackend.from_options(model=CKPT, data=None, batch_size=64, device='cpu', num_threads=None,
sort_by_length=True)``; ``parse(list of token lists) -> list of one-line brackets``, in length-sorted batches of
``batch_size`` sentences on ``device`` (the model and every batch; the structure maps are taken in fp32 and the
trees read off them on the CPU, see the models' ``induce``), results in input order.

The models were trained on words only (punctuation removed, normalised as the checkpoint's task says:
lower-cased and digits -> ``N`` unless trained ``--eval-keep-case`` / ``--eval-keep-digits``). So a sentence's
word tokens (those with a letter or digit) are normalised and parsed, and every other token (punctuation)
is put back as a child of the lowest induced constituent that holds both its neighbouring words (the root at
the sentence's edges): every induced constituent stays contiguous and keeps its words. Induced constituents
are unlabeled: nodes are written ``X`` and words get the preterminal ``X`` (so a BPE-split word becomes an
``X`` node over its pieces, as any POS would).
Pickling keeps only the options, so worker processes reload the checkpoint.
"""

import logging
import re
from typing import List, Optional, Sequence, Tuple, Union

from fairseq_tree.data.induction_text import normalize_word
from fairseq_tree.inference.checkpoint import as_parser_backend
from fairseq_tree.inference.induce import induce_all, load
from fairseq_tree.parsers import CheckpointBackend, resolve_device
from fairseq_tree.trees import Tree, post_order, to_brackets

logger = logging.getLogger(__name__)

_UNESCAPE_INPUT = {"-LRB-": "(", "-RRB-": ")"}
_WORDLIKE = re.compile(r"\w")
LABEL = "X"


def tokens_to_tree(tokens: Sequence[str], word_positions: Sequence[int], word_spans):
    """Lift an induced tree over the word tokens to all tokens. ``word_positions[k]``: token index of word k;
    ``word_spans``: half-open spans over words. -> :class:`fairseq_tree.trees.Tree` (labels and tags ``X``)."""

    n = len(tokens)
    spans = post_order([(word_positions[i], word_positions[j - 1] + 1) for i, j in word_spans if j - i >= 2]
                       + ([(0, n)] if n >= 2 else []))
    tree = Tree(words=list(tokens), tags=[LABEL] * n, labels=[LABEL] * len(spans), spans=spans)
    tree.check()
    return tree


def split_words(sentence: Sequence[str], lowercase: bool, digits: bool) -> Tuple[List[str], List[int], List[str]]:
    """A token list -> (tokens, ``-LRB-``/``-RRB-`` as ``(``/``)``; the positions of its word tokens (those with a
    letter or digit); those words normalised as the model's training text: lower-cased, digits -> ``N``)."""
    tokens = [_UNESCAPE_INPUT.get(t, t) for t in sentence]
    pos = [k for k, t in enumerate(tokens) if _WORDLIKE.search(t)]
    return tokens, pos, [normalize_word(sentence[k], lowercase, digits) for k in pos]


class InducedBackend(CheckpointBackend):
    def __init__(self, model: str, data: Optional[str] = None, batch_size: int = 64, device: Optional[str] = None,
                 num_threads: Optional[int] = None, sort_by_length: bool = True):
        if not model:
            raise ValueError("--parser induced needs a checkpoint (--parser-model CKPT)")
        self.options = dict(model=model, data=data, batch_size=batch_size, device=device, num_threads=num_threads,
                            sort_by_length=sort_by_length)
        device = resolve_device(device)
        import torch

        if num_threads:
            torch.set_num_threads(int(num_threads))
        with as_parser_backend("induced"):  # its errors name --parser / --parser-data
            self.model, self.task = load(model, data, device)
        if not hasattr(self.model, "induce"):
            raise ValueError(f"{model}: {type(self.model).__name__} induces no structure")
        self.lowercase = not getattr(self.task.cfg, "eval_keep_case", False)
        self.digits = not getattr(self.task.cfg, "eval_keep_digits", False)
        self.batch_size, self.device, self.sort_by_length = int(batch_size), device, bool(sort_by_length)
        self.max_words = self.model.max_positions() - 2

    def prepare(self, sentence: Sequence[str]) -> Tuple[List[str], List[int], List[str]]:
        """A token list -> (tokens, positions of its words, the normalised words); ValueError if unparsable."""

        if not sentence:
            raise ValueError("empty sentence")
        tokens, pos, words = split_words(sentence, self.lowercase, self.digits)
        if len(pos) > self.max_words:
            raise ValueError(f"{len(pos)} words: longer than the model's --max-positions - 2 = {self.max_words}")
        return tokens, pos, words

    def parse_batch(self, items) -> List[Union[str, Exception]]:
        """At most ``batch_size`` prepared sentences -> brackets (or the ValueError of a tree that cannot be
        lifted): one padded batch [B, max words + 2] through ``model.induce``."""

        spans, _, _ = induce_all(self.model, self.task, [w for _, _, w in items], self.batch_size,
                                 device=self.device)
        out: List[Union[str, Exception]] = []
        for (tokens, pos, _), sp in zip(items, spans):
            try:
                out.append(to_brackets(tokens_to_tree(tokens, pos, sp)))
            except ValueError as e:
                out.append(ValueError(f"induced tree: {e}"))
        return out

    def describe(self, e: Exception) -> str:
        return str(e) if isinstance(e, ValueError) else super().describe(e)

__all__ = ["InducedBackend", "split_words", "tokens_to_tree"]
