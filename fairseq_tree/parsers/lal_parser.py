"""Constituency parsing of pre-tokenized text with our own ``lal_parser`` checkpoint (``--parser lal``).

``LALBackend.from_options(model=CKPT, data=None, batch_size=64, device=None, num_threads=None,
sort_by_length=True, unknown_tags=False)`` (``device`` None: the GPU when there is one); ``parse(list of
token lists) -> list of one-line PTB brackets`` with POS preterminals, in length-sorted batches of
``batch_size`` sentences on ``device`` (the model's weights and every batch; the
CKY / Eisner charts run in fp32 on that device, see :mod:`fairseq_tree.modules.chart`), results in input
order. POS tags: a model trained ``--no-pos-tags`` predicts them; a model that takes tags as input is refused
(raw text has no tags) unless ``unknown_tags=True`` (every tag unknown; its F1 falls far below the model's).
Pickling keeps only the options, so worker processes reload the checkpoint.
"""

from typing import List, Optional, Sequence

from fairseq_tree.inference.checkpoint import as_parser_backend
from fairseq_tree.inference.parse import LALParser
from fairseq_tree.parsers import CheckpointBackend, resolve_device

_UNESCAPE_INPUT = {"-LRB-": "(", "-RRB-": ")"}


class LALBackend(CheckpointBackend):
    def __init__(self, model: str, data: Optional[str] = None, batch_size: int = 64, device: Optional[str] = None,
                 num_threads: Optional[int] = None, sort_by_length: bool = True, unknown_tags: bool = False):
        if not model:
            raise ValueError("--parser lal needs a checkpoint (--parser-model CKPT)")
        self.options = dict(model=model, data=data, batch_size=batch_size, device=device, num_threads=num_threads,
                            sort_by_length=sort_by_length, unknown_tags=unknown_tags)
        device = resolve_device(device)
        import torch

        if num_threads:
            torch.set_num_threads(int(num_threads))
        self.batch_size, self.device, self.sort_by_length = int(batch_size), device, bool(sort_by_length)
        with as_parser_backend("lal"):  # its errors name --parser / --parser-data
            self.parser = LALParser(model, data=data, batch_size=self.batch_size, device=device,
                                    unknown_tags=unknown_tags)
        self.parser.check_tags(None)  # raw text has no tags: a tag-reading model stops here, before any input
        self.max_words = self.parser.model.args.max_positions - 2

    def prepare(self, sentence: Sequence[str]) -> List[str]:
        """A token list -> the words the model reads (``-LRB-``/``-RRB-`` as ``(``/``)``); ValueError if unparsable."""
        if not sentence:
            raise ValueError("empty sentence")
        if len(sentence) > self.max_words:
            raise ValueError(f"{len(sentence)} words: longer than the model's --max-positions "
                             f"{self.max_words + 2} - 2")
        return [_UNESCAPE_INPUT.get(w, w) for w in sentence]

    def parse_batch(self, items: List[List[str]]) -> List[str]:
        """At most ``batch_size`` word lists -> their brackets: one padded batch [B, max n + 2] through the model."""
        return [t.to_brackets(one_word=True) for t in self.parser.parse(items)]

__all__ = ["LALBackend"]
