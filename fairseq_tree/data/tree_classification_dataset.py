"""Datasets of the ``tree_classification`` task: trees with the classes of the sentence, its nodes and leaves.

A sample is one tree in the project's representation (``fairseq_tree/trees/tree.py``): leaves [n] (token ids, no
EOS), nodes [m] (node-input label ids, post-order), spans [m, 2] (half-open), plus ``target`` (the sentence's
class), ``node_target`` [m] and ``leaf_target`` [n] (-1 = no target), as written by
``fairseq-tree-preprocess --task classification`` (:mod:`fairseq_tree.data.class_labels`).

:class:`PhraseDataset` turns every labelled node and leaf of a tree into its own sample (the phrase's subtree
with the phrase's class as the sentence target): the protocol Tai et al. (2015) used to train sequence models
on the Stanford Sentiment Treebank.
"""

from typing import Sequence

import numpy as np
import torch
from fairseq.data import data_utils

from fairseq_tree.data.class_labels import NO_TARGET
from fairseq_tree.data.sized_dataset import SizedDataset
from fairseq_tree.data.tree_language_pair_dataset import collate_tree_side


def collate_classification(samples: Sequence[dict], pad_idx: int, label_pad_idx: int) -> dict:
    """Samples -> a batch in sample order (no sorting). ``net_input``: ``src_tokens`` [B, N] (right-padded),
    ``src_lengths`` [B], ``src_nodes`` [B, M], ``src_spans`` [B, M, 2]; ``target`` [B]; ``node_target``
    [B, M] and ``leaf_target`` [B, N] padded with -1 (no target)."""
    if not samples:
        return {}
    src_tokens = data_utils.collate_tokens([s["source"] for s in samples], pad_idx, left_pad=False)
    nodes, spans = collate_tree_side([s["nodes"] for s in samples], [s["spans"] for s in samples], label_pad_idx)
    sizes = [len(s["source"]) + len(s["nodes"]) for s in samples]
    return {
        "id": torch.tensor([s["id"] for s in samples], dtype=torch.long),
        "nsentences": len(samples),
        "ntokens": sum(sizes),
        "net_input": {"src_tokens": src_tokens,
                      "src_lengths": torch.tensor([len(s["source"]) for s in samples], dtype=torch.long),
                      "src_nodes": nodes, "src_spans": spans},
        "target": torch.stack([s["target"] for s in samples]),
        "node_target": data_utils.collate_tokens([s["node_target"] for s in samples], NO_TARGET, left_pad=False),
        "leaf_target": data_utils.collate_tokens([s["leaf_target"] for s in samples], NO_TARGET, left_pad=False),
    }


class _Batching(SizedDataset):
    """Both datasets: ``self.sizes`` = leaves + nodes of each sample, the length the tree encoder attends over."""

    def collater(self, samples):
        return collate_classification(samples, self.pad_idx, self.label_pad_idx)

    @property
    def supports_prefetch(self):
        return False


class TreeClassificationDataset(_Batching):
    """The binarized datasets of one split (see the module docstring)."""

    def __init__(self, leaves, nodes, spans, target, node_target, leaf_target, pad_idx: int, label_pad_idx: int,
                 shuffle: bool = True):
        parts = [leaves, nodes, spans, target, node_target, leaf_target]
        if len({len(p) for p in parts}) != 1:
            raise ValueError(f"datasets of unequal length: {[len(p) for p in parts]}")
        self.leaves, self.nodes, self.spans = leaves, nodes, spans
        self.target, self.node_target, self.leaf_target = target, node_target, leaf_target
        self.pad_idx, self.label_pad_idx, self.shuffle = pad_idx, label_pad_idx, shuffle
        self.leaf_sizes = np.asarray(leaves.sizes)
        self.node_sizes = np.asarray(nodes.sizes)
        self.sizes = self.leaf_sizes + self.node_sizes

    def __getitem__(self, index):
        return {"id": index, "source": self.leaves[index].long(), "nodes": self.nodes[index].long(),
                "spans": self.spans[index].long().view(-1, 2), "target": self.target[index].long()[0],
                "node_target": self.node_target[index].long(), "leaf_target": self.leaf_target[index].long()}


def labelled_phrases(spans: np.ndarray, node_target: np.ndarray, leaf_target: np.ndarray):
    """The labelled units of one tree as phrases: (start [P], end [P], size [P]) with the half-open leaf range
    of each labelled node, then each labelled leaf, and its sample size (leaves + nodes inside the range).
    spans [m, 2], node_target [m], leaf_target [n]."""
    nodes = np.nonzero(node_target != NO_TARGET)[0]
    leaves = np.nonzero(leaf_target != NO_TARGET)[0]
    start = np.concatenate([spans[nodes, 0], leaves]).astype(np.int64)
    end = np.concatenate([spans[nodes, 1], leaves + 1]).astype(np.int64)
    inside = ((spans[None, :, 0] >= start[:, None]) & (spans[None, :, 1] <= end[:, None])).sum(1)
    return start, end, end - start + inside


def phrase_item(item: dict, start: int, end: int, index: int) -> dict:
    """The sample of the phrase over leaves [start, end) of a tree sample: its leaves, the nodes inside (spans
    shifted to 0, post-order kept: the phrase's own node is the last), their targets, and the phrase's class
    as ``target``."""
    spans = item["spans"]
    inside = (spans[:, 0] >= start) & (spans[:, 1] <= end)
    leaf_target = item["leaf_target"][start:end]
    node_target = item["node_target"][inside]
    return {"id": index, "source": item["source"][start:end], "nodes": item["nodes"][inside],
            "spans": spans[inside] - start, "node_target": node_target, "leaf_target": leaf_target,
            "target": node_target[-1] if len(node_target) else leaf_target[0]}


class PhraseDataset(_Batching):
    """Every labelled unit (node or leaf) of ``base`` as its own sample (:func:`phrase_item`). For training
    only (Tai et al. 2015)."""

    def __init__(self, base: TreeClassificationDataset, shuffle: bool = True):
        self.base, self.shuffle = base, shuffle
        self.pad_idx, self.label_pad_idx = base.pad_idx, base.label_pad_idx
        sentence, start, end, size = [], [], [], []
        for i in range(len(base)):  # once, at load time
            s, e, z = labelled_phrases(base.spans[i].numpy().reshape(-1, 2), base.node_target[i].numpy(),
                                       base.leaf_target[i].numpy())
            sentence.append(np.full(len(s), i, dtype=np.int64))
            start.append(s)
            end.append(e)
            size.append(z)
        self.sentence, self.start, self.end, self.sizes = (np.concatenate(x) for x in (sentence, start, end, size))

    def __getitem__(self, index):
        return phrase_item(self.base[int(self.sentence[index])], int(self.start[index]), int(self.end[index]), index)


__all__ = ["TreeClassificationDataset", "PhraseDataset", "collate_classification", "labelled_phrases", "phrase_item"]
