"""A fairseq ``LanguagePairDataset`` whose source is a tree: leaves, node labels and spans.

The leaves are the ordinary source dataset (no EOS); ``nodes`` [m] and ``spans`` [2m] (half-open,
post-order, see ``fairseq_tree/trees/tree.py``) come from the ``.nodes`` and ``.spans`` datasets written by
``fairseq-tree-preprocess``. ``--max-source-positions`` counts leaves + nodes, the length the encoder attends
over, and so does batching unless ``batch_by="leaves"`` (``--tree-batch-by``) counts the leaves only. The
two-length batching is :class:`LeafBatchedLanguagePairDataset`, shared with the positions-matched control
(``positions_matched_translation``: a plain source of n leaves + m label tokens).
"""

from typing import List, Sequence

import numpy as np
import torch
from fairseq.data import LanguagePairDataset, data_utils


def collate_tree_side(nodes: Sequence[torch.Tensor], spans: Sequence[torch.Tensor], label_pad: int):
    """Right-pad per-sentence node labels [m] and spans [m, 2] into [B, M] and [B, M, 2] (spans pad 0)."""
    bsz = len(nodes)
    m = max([len(x) for x in nodes] + [0])
    out_nodes = torch.full((bsz, m), label_pad, dtype=torch.long)
    out_spans = torch.zeros((bsz, m, 2), dtype=torch.long)
    for b, (n, s) in enumerate(zip(nodes, spans)):
        out_nodes[b, : len(n)] = n
        out_spans[b, : len(n)] = s.view(-1, 2)
    return out_nodes, out_spans


class LeafBatchedLanguagePairDataset(LanguagePairDataset):
    """A ``LanguagePairDataset`` whose source has two lengths per sentence: its encoder positions (what
    ``--max-source-positions`` is checked against) and its leaves (the words); ``batch_by`` says which one
    fairseq's batching (``num_tokens``, ``num_tokens_vec``, ``ordered_indices``) reads as the source length.
    ``batch_by="leaves"`` gives the batches that fairseq's translation task draws from the words alone.

    position_sizes, leaf_sizes: [N] int arrays (leaf_sizes <= position_sizes)."""

    def __init__(self, base: LanguagePairDataset, position_sizes, leaf_sizes, batch_by: str = "positions"):
        if batch_by not in ("positions", "leaves"):
            raise ValueError(f"batch_by must be 'positions' or 'leaves', not {batch_by!r}")
        self.__dict__.update(base.__dict__)
        self.position_sizes, self.leaf_sizes = np.asarray(position_sizes), np.asarray(leaf_sizes)
        if len(self.position_sizes) != len(base) or len(self.leaf_sizes) != len(base):
            raise ValueError(f"{len(self.position_sizes)} position and {len(self.leaf_sizes)} leaf sizes for "
                             f"{len(base)} sentences")
        self.sizes = (np.vstack((self.position_sizes, self.tgt_sizes)).T if self.tgt_sizes is not None
                      else self.position_sizes)
        self.src_sizes = self.position_sizes if batch_by == "positions" else self.leaf_sizes

    def size(self, index):
        """(positions, target length): what --max-positions is checked against, whatever the batching."""
        return self.position_sizes[index], self.tgt_sizes[index] if self.tgt_sizes is not None else 0

    def filter_indices_by_size(self, indices, max_sizes):
        return data_utils.filter_paired_dataset_indices_by_size(self.position_sizes, self.tgt_sizes, indices,
                                                                max_sizes)


class TreeLanguagePairDataset(LeafBatchedLanguagePairDataset):
    """Adds ``net_input['src_nodes']`` [B, M] and ``net_input['src_spans']`` [B, M, 2] to each batch; the
    encoder attends over leaves + nodes, its positions."""

    def __init__(self, base: LanguagePairDataset, nodes, spans, label_dict, batch_by: str = "positions"):
        if len(nodes) != len(base) or len(spans) != len(base):
            raise ValueError(f"tree side has {len(nodes)} node rows and {len(spans)} span rows "
                             f"for {len(base)} sentences")
        self.nodes, self.spans, self.label_dict = nodes, spans, label_dict
        self.node_sizes = np.asarray(nodes.sizes if hasattr(nodes, "sizes") else [len(x) for x in nodes])
        leaves = np.asarray(base.src_sizes)
        super().__init__(base, leaves + self.node_sizes, leaves, batch_by)
        self.on_collate = None  # optional callback(batch): fairseq-interactive's side channel (side_channels.py)

    def __getitem__(self, index):
        item = super().__getitem__(index)
        item["nodes"] = self.nodes[index].long()
        item["spans"] = self.spans[index].long().view(-1, 2)
        return item

    def collater(self, samples: List[dict], pad_to_length=None):
        res = super().collater(samples, pad_to_length=pad_to_length)
        if not res:
            return res
        by_id = {s["id"]: s for s in samples}
        ordered = [by_id[int(i)] for i in res["id"]]  # collate() sorted the batch by source length
        nodes, spans = collate_tree_side([s["nodes"] for s in ordered], [s["spans"] for s in ordered],
                                         self.label_dict.pad())
        res["net_input"]["src_nodes"] = nodes
        res["net_input"]["src_spans"] = spans
        if self.on_collate is not None:
            self.on_collate(res)
        return res

    @property
    def supports_prefetch(self):
        return False
