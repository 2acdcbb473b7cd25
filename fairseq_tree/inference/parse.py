"""Parsing lists of sentences with a ``lal_parser`` checkpoint (the library behind ``fairseq-tree-parse``,
:class:`fairseq_tree.hub.ParserHubInterface` and the ``lal`` preprocessing backend)."""

from typing import List, Optional, Sequence

import torch

from fairseq_tree.inference.batching import length_batches, restore_order
from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.trees import Tree
from fairseq_tree.utils.progress import Progress


class MissingTags(ValueError):
    """A tag-reading parser given sentences without POS tags (see :meth:`LALParser.check_tags`)."""


class LALParser:
    """A loaded checkpoint: ``parse(sentences, tags=None)`` -> one :class:`~fairseq_tree.trees.Tree` per sentence
    (the EVALB view: labeled spans incl. one-word constituents, tags, heads, relations), in batches sorted by
    length; ``attention(...)`` -> the Label Attention Layer's label-to-word attention."""

    def __init__(self, path: str, data: Optional[str] = None, batch_size: int = 64, device: Optional[str] = None,
                 unknown_tags: bool = False):
        models, _, task = load_checkpoint(path, data, device, expect=("constituency_parsing",),
                                          user="fairseq-tree-parse (LALParserModel.from_pretrained)")
        self.model, self.task = models[0], task
        self.batch_size = batch_size
        self.labels, self.rels = task.label_names(), task.relation_names()
        td = task.dicts["tags"]
        self.tag_names = [td[i] for i in range(len(td))]
        self.uses_tags = self.model.embed_tags is not None
        self.path, self.unknown_tags = path, unknown_tags

    @property
    def device(self) -> torch.device:
        """Where the model is (the hub's ``.to()`` / ``.cuda()`` move it; batches follow)."""
        return next(self.model.parameters()).device

    @property
    def head_names(self) -> List[str]:
        return self.labels if self.model.tied else [f"head {i}" for i in range(self.model.lal_heads)]

    @torch.no_grad()
    def parse(self, sentences: Sequence[Sequence[str]], tags: Optional[Sequence[Sequence[str]]] = None,
              progress: Optional[str] = None) -> List[Tree]:
        """Token lists (and their POS tags, or None) -> one Tree per sentence, in input order. Its tags are the
        given ones, or the model's own when it predicts tags (``X`` when it has neither). A model that reads
        tags refuses ``tags=None`` (:class:`MissingTags`) unless built with ``unknown_tags=True``."""
        self.check_tags(tags)
        return self._batched(sentences, tags, self._parse_batch, progress)

    def check_tags(self, tags) -> None:
        """MissingTags when the model reads POS tags, none are given and ``unknown_tags`` was not asked for."""
        if tags is None and self.uses_tags and not self.unknown_tags:
            raise MissingTags(f"{self.path} reads POS tags (it was trained without --no-pos-tags) and the input "
                              "has none: give tagged input (.mrg / .conllu), or use a parser trained with "
                              "--no-pos-tags (it predicts its own tags), or ask for every tag unknown "
                              "(--unknown-tags; its F1 falls far below the model's)")

    @torch.no_grad()
    def attention(self, sentences: Sequence[Sequence[str]], tags: Optional[Sequence[Sequence[str]]] = None
                  ) -> List[torch.Tensor]:
        """Label-to-word attention of every sentence, [H, n + 2] over BOS, words, EOS (rows: :attr:`head_names`):
        the encoder's forward only, no decoding."""
        def run(batch_sentences, batch_tags):
            attention = self.model(**self._net_input(batch_sentences, batch_tags))["attention"]
            return [attention[b, :, :len(words) + 2].cpu() for b, words in enumerate(batch_sentences)]

        return self._batched(sentences, tags, run)

    def _batched(self, sentences, tags, run, progress: Optional[str] = None):
        """``run(sentences, tags)`` on length-sorted batches, results in input order; ``progress``: the name of
        a progress bar / log line (rate, ETA) over the sentences."""
        batches = length_batches([len(s) for s in sentences], self.batch_size)
        bar = Progress(progress, len(sentences)) if progress else None

        def each():
            for idx in batches:
                result = run([sentences[i] for i in idx], None if tags is None else [tags[i] for i in idx])
                if bar:
                    bar.update(len(idx))
                yield result
        try:
            return restore_order(batches, each())
        finally:
            if bar:
                bar.close()

    def _net_input(self, sentences, tags) -> dict:
        """One padded batch [B, max n + 2] on the parser's device."""
        batch = self.task.build_batch(sentences, tags)
        return {k: v.to(self.device) for k, v in batch["net_input"].items()}

    def _parse_batch(self, sentences, tags) -> List[Tree]:
        spans, heads, rels, o = self.model.parse(self._net_input(sentences, tags))
        heads, rels = heads.cpu(), rels.cpu()
        pred_tags = o["tag_scores"].argmax(-1).cpu() if o.get("tag_scores") is not None else None
        out = []
        for b, words in enumerate(sentences):
            n = len(words)
            if pred_tags is not None:
                t = [self.tag_names[x] for x in pred_tags[b, :n].tolist()]
            else:
                t = list(tags[b]) if tags is not None else ["X"] * n
            out.append(Tree.from_labeled_spans(
                words, t, [(s, e, self.labels[c]) for s, e, c in spans[b]], heads[b, 1:n + 1].tolist(),
                [self.rels[r] if r < len(self.rels) else "dep" for r in rels[b, 1:n + 1].tolist()]))
        return out


__all__ = ["LALParser", "MissingTags"]
