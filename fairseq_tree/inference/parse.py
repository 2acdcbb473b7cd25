"""Parsing lists of sentences with a ``lal_parser`` checkpoint (the library behind ``fairseq-tree-parse``,
:class:`fairseq_tree.hub.ParserHubInterface` and the ``lal`` preprocessing backend)."""

from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch

from fairseq_tree.inference.batching import length_batches, restore_order
from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.trees import labeled_to_brackets


@dataclass
class Parse:
    words: List[str]
    tags: List[str]
    spans: List[tuple]  # (start, end, label)
    heads: List[int]
    relations: List[str]
    attention: Optional[torch.Tensor] = None  # [H, n + 2] over BOS, words, EOS

    def brackets(self) -> str:
        return labeled_to_brackets(self.words, self.tags, self.spans)


class LALParser:
    """A loaded checkpoint: ``parse(sentences, tags=None) -> list of Parse`` in batches, sorted by length."""

    def __init__(self, path: str, data: Optional[str] = None, batch_size: int = 64, device: str = "cpu"):
        models, _, task = load_checkpoint(path, data, device)
        self.model, self.task = models[0], task
        self.batch_size, self.device = batch_size, device
        self.labels, self.rels = task.label_names(), task.relation_names()
        td = task.dicts["tags"]
        self.tag_names = [td[i] for i in range(len(td))]
        self.uses_tags = self.model.embed_tags is not None

    @property
    def head_names(self) -> List[str]:
        return self.labels if self.model.tied else [f"head {i}" for i in range(self.model.lal_heads)]

    @torch.no_grad()
    def parse(self, sentences: Sequence[Sequence[str]], tags: Optional[Sequence[Sequence[str]]] = None,
              keep_attention: bool = False) -> List[Parse]:
        """Token lists (and their POS tags, or None) -> one :class:`Parse` per sentence, in input order."""
        batches = length_batches([len(s) for s in sentences], self.batch_size)
        return restore_order(batches, (self._parse_batch(sentences, tags, idx, keep_attention) for idx in batches))

    def _parse_batch(self, sentences, tags, idx: List[int], keep_attention: bool) -> List[Parse]:
        """The sentences ``idx`` as one padded batch [B, max n + 2] -> their parses, in ``idx`` order."""
        batch = self.task.build_batch([sentences[i] for i in idx], None if tags is None else [tags[i] for i in idx])
        net_input = {k: v.to(self.device) for k, v in batch["net_input"].items()}
        spans, heads, rels, o = self.model.parse(net_input)
        heads, rels = heads.cpu(), rels.cpu()
        pred_tags = o["tag_scores"].argmax(-1).cpu() if o.get("tag_scores") is not None else None
        out = []
        for b, i in enumerate(idx):
            words = list(sentences[i])
            n = len(words)
            if pred_tags is not None:
                t = [self.tag_names[x] for x in pred_tags[b, :n].tolist()]
            else:
                t = list(tags[i]) if tags is not None else ["X"] * n
            out.append(Parse(words, t, [(s, e, self.labels[c]) for s, e, c in spans[b]],
                             heads[b, 1:n + 1].tolist(), [self.rels[r] if r < len(self.rels) else "dep"
                                                          for r in rels[b, 1:n + 1].tolist()],
                             o["attention"][b, :, :n + 2].cpu() if keep_attention else None))
        return out


__all__ = ["LALParser", "Parse"]
