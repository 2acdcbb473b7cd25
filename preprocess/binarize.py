"""Writing the binarized datasets: fairseq MMap indexed datasets, built per shard and merged.

Per example (see the README for file names): source leaves (token ids, **no EOS**), node labels
(label ids), spans (int32, flattened ``[s0, e0, s1, e1, ...]``, half-open), target (ids + EOS).
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Sequence

import numpy as np
from fairseq.data import indexed_dataset
from fairseq.data.dictionary import Dictionary


class ArrayBuilder:
    """An ``MMapIndexedDatasetBuilder`` fed with Python lists (skips a torch tensor per item)."""

    def __init__(self, prefix: str, dtype):
        self.prefix = prefix
        self.dtype = np.dtype(dtype)
        self._builder = indexed_dataset.MMapIndexedDatasetBuilder(
            indexed_dataset.data_file_path(prefix), dtype=self.dtype.type)

    def add(self, values: Sequence[int]) -> None:
        arr = np.asarray(values, dtype=self.dtype)
        # same bytes and bookkeeping as MMapIndexedDatasetBuilder.add_item, without torch
        self._builder._data_file.write(arr.tobytes(order="C"))
        self._builder._sizes.append(arr.size)

    def merge(self, prefix: str) -> None:
        self._builder.merge_file_(prefix)

    def finalize(self) -> None:
        self._builder.finalize(indexed_dataset.index_file_path(self.prefix))


def token_dtype(dictionary: Dictionary):
    return indexed_dataset.best_fitting_int_dtype(len(dictionary))


def dataset_files(prefix: str) -> List[str]:
    return [indexed_dataset.data_file_path(prefix), indexed_dataset.index_file_path(prefix)]


def build_dictionary(counts: Dict[str, int], nwords: int = -1, threshold: int = 0,
                     padding_factor: int = 8) -> Dictionary:
    """A fairseq dictionary from counts (symbols added in sorted order, so the result is deterministic)."""
    d = Dictionary()
    for word in sorted(counts):
        d.add_symbol(word, n=counts[word])
    d.finalize(threshold=threshold, nwords=nwords, padding_factor=padding_factor)
    return d


def encode(dictionary: Dictionary, tokens: Iterable[str], append_eos: bool) -> List[int]:
    unk = dictionary.unk_index
    get = dictionary.indices.get
    ids = [get(t, unk) for t in tokens]
    if append_eos:
        ids.append(dictionary.eos_index)
    return ids


def merge_datasets(shard_prefixes: Sequence[str], out_prefix: str, dtype) -> None:
    """Concatenate shard datasets into ``out_prefix`` via temporary files renamed at the end."""
    tmp = out_prefix + ".tmp"
    builder = ArrayBuilder(tmp, dtype)
    for p in shard_prefixes:
        builder.merge(p)
    builder.finalize()
    for src, dst in zip(dataset_files(tmp), dataset_files(out_prefix)):
        os.replace(src, dst)
