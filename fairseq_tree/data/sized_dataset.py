"""Length-based batching shared by the plugin's datasets: ``self.sizes`` [len] (each sample's length as the model
counts it: leaves + nodes for trees, words + 2 for the parser) and ``self.shuffle`` drive ``--max-tokens``,
``--max-positions`` and the length-sorted order (shuffled first, stable sort) fairseq batches in."""

import numpy as np
from fairseq.data import FairseqDataset


class SizedDataset(FairseqDataset):
    sizes: np.ndarray
    shuffle: bool

    def __len__(self):
        return len(self.sizes)

    def num_tokens(self, index):
        return int(self.sizes[index])

    def num_tokens_vec(self, indices):
        return self.sizes[indices]

    def size(self, index):
        return int(self.sizes[index])

    def ordered_indices(self):
        order = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        return order[np.argsort(self.sizes[order], kind="mergesort")]


__all__ = ["SizedDataset"]
