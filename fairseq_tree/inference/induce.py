"""Inducing trees (and dependencies) for lists of sentences with a ``tree_induction`` checkpoint
(``constituent_transformer``, ``structformer``): the library behind ``fairseq-tree-induce``,
:class:`fairseq_tree.hub.InductionHubInterface` and the ``induced`` preprocessing backend."""

from typing import Dict, List, Optional

import torch

from fairseq_tree.inference.batching import length_batches
from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.utils.progress import Progress


def load(path: str, data: Optional[str] = None, device: Optional[str] = None):
    """-> (model in eval mode, task) from a ``tree_induction`` checkpoint (``device`` None: the GPU if any)."""
    # the checkpoint's --eval-treebank is not needed here (and may not exist on this machine)
    models, _, task = load_checkpoint(path, data, device, expect=("tree_induction",),
                                      user="fairseq-tree-induce (StructFormerModel / ConstituentTransformerModel"
                                           ".from_pretrained)", eval_treebank=None, eval_deps=None)
    return models[0], task


def encode(task, words: List[str]) -> torch.Tensor:
    """word list -> ``<s> w.. </s>`` ids."""
    d = task.source_dictionary
    body = d.encode_line(" ".join(words), add_if_not_exist=False, append_eos=True).long()
    return torch.cat([body.new_tensor([d.bos()]), body])


@torch.no_grad()
def induce_all(model, task, sentences: List[List[str]], batch_size: int = 64, keep_maps: int = 0,
               device=None, progress: Optional[str] = None, **opts):
    """Induce every sentence (length-sorted batches). -> (spans, heads or None, maps of the first ``keep_maps``
    sentences as {k: {name: tensor [..., n, n]}}). An empty sentence gets no spans and no heads. ``device``:
    where the batches go (default: the model's); ``progress``: the name of a progress bar / log line."""
    from fairseq.data import data_utils

    pad = task.source_dictionary.pad()
    device = device if device is not None else next(model.parameters()).device
    spans: List[Optional[list]] = [[] if not s else None for s in sentences]
    heads: List[Optional[list]] = [[] if not s else None for s in sentences]
    maps: Dict[int, Dict[str, torch.Tensor]] = {}
    nonempty = [k for k in range(len(sentences)) if sentences[k]]  # the model cannot read an empty sentence
    has_heads = False
    bar = Progress(progress, len(sentences)) if progress else None
    for batch in length_batches([len(sentences[k]) for k in nonempty], batch_size):
        if bar:
            bar.update(len(batch))
        idx = [nonempty[j] for j in batch]
        toks = [encode(task, sentences[k]) for k in idx]
        src = data_utils.collate_tokens(toks, pad, left_pad=False).to(device)
        lengths = torch.tensor([len(t) for t in toks], device=device)
        s = model.induce(src, lengths, maps=any(k < keep_maps for k in idx), **opts)
        for b, k in enumerate(idx):
            n = len(sentences[k])
            if int(s.lengths[b]) != n:
                raise RuntimeError(f"sentence {k + 1}: model saw {int(s.lengths[b])} words, expected {n}")
            spans[k] = s.spans[b]
            if s.heads is not None:
                heads[k], has_heads = s.heads[b], True
            if k < keep_maps:
                # [.., n, n] maps over word pairs; per-gap ones ([B, n_max - 1], constituent attention's
                # [B, L, n_max - 1] links) keep the sentence's n - 1 gaps
                maps[k] = {name: m[b][..., :n, :n] if m.dim() >= 3 and name != "links" else m[b][..., : max(n - 1, 0)]
                           for name, m in s.maps.items()}
    if bar:
        bar.close()
    return spans, (heads if has_heads else None), maps


__all__ = ["load", "encode", "induce_all"]
