"""Constituency parsing of pre-tokenized text with our own ``lal_parser`` checkpoint (``--parser lal``).

``LALBackend.from_options(model=CKPT, data=None, batch_size=64, device='cpu', num_threads=None)``;
``parse(list of token lists) -> list of one-line PTB brackets`` with POS preterminals, batched (sentences are
sorted by length inside :class:`fairseq_tree.evaluation.parse_cli.LALParser`). POS tags: a model trained
``--no-pos-tags`` predicts them; a model that takes tags as input gets none here (every tag unknown; a
warning says so), so train the backend's model with ``--no-pos-tags``.
Pickling keeps only the options, so worker processes reload the checkpoint.
"""

import logging
from typing import List, Optional, Sequence

from preprocess.parsers import CheckpointBackend, ParseError

logger = logging.getLogger(__name__)

_UNESCAPE_INPUT = {"-LRB-": "(", "-RRB-": ")"}


class LALBackend(CheckpointBackend):
    def __init__(self, model: str, data: Optional[str] = None, batch_size: int = 64, device: str = "cpu",
                 num_threads: Optional[int] = None):
        if not model:
            raise ValueError("--parser lal needs a checkpoint (--parser-model CKPT)")
        self.options = dict(model=model, data=data, batch_size=batch_size, device=device, num_threads=num_threads)
        import torch

        from fairseq_tree.evaluation.parse_cli import LALParser

        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.parser = LALParser(model, data=data, batch_size=int(batch_size), device=device)
        if self.parser.uses_tags:
            logger.warning("%s takes POS tags as input, which raw text lacks: train with --no-pos-tags", model)

    def parse(self, sentences: Sequence[Sequence[str]]) -> List[str]:
        for i, s in enumerate(sentences):
            if not s:
                raise ParseError(i, "empty sentence")
            if len(s) + 2 > self.parser.model.args.max_positions:
                raise ParseError(i, f"{len(s)} words: longer than the model's --max-positions "
                                    f"{self.parser.model.args.max_positions} - 2")
        words = [[_UNESCAPE_INPUT.get(w, w) for w in s] for s in sentences]
        try:
            parses = self.parser.parse(words)
        except Exception as e:  # a batch failure: find the first sentence that fails alone
            for i, s in enumerate(words):
                try:
                    self.parser.parse([s])
                except Exception as e1:
                    raise ParseError(i, f"{type(e1).__name__}: {e1}") from None
            raise ParseError(0, f"{type(e).__name__}: {e}") from None
        return [p.brackets() for p in parses]


__all__ = ["LALBackend"]
