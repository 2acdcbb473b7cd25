"""Writing the binarized datasets: fairseq MMap indexed datasets, built per shard and merged.

Per example (see the README for file names): source leaves (token ids, **no EOS**), node labels
(label ids), spans (int32, flattened ``[s0, e0, s1, e1, ...]``, half-open), target (ids + EOS).
"""

from __future__ import annotations

import os
import shutil
import struct
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


def write_index(path: str, dtype, sizes: Iterable[np.ndarray], count: int) -> None:
    """An MMap index (fairseq's ``Index.writer`` bytes) of ``count`` items from chunks of their sizes;
    ``sizes`` is iterated twice (sizes, then pointers), so chunks can be read one at a time."""
    dtype = np.dtype(dtype)
    with open(path, "wb") as f:
        f.write(indexed_dataset.MMapIndexedDataset.Index._HDR_MAGIC)
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", indexed_dataset._dtype_header_code(dtype.type)))
        f.write(struct.pack("<Q", count))
        for chunk in sizes:
            f.write(np.asarray(chunk, dtype=np.int32).tobytes(order="C"))
        address = 0
        for chunk in sizes:  # pointers: byte offset of every item in the .bin
            nbytes = np.asarray(chunk, dtype=np.int64) * dtype.itemsize
            f.write((np.cumsum(nbytes) - nbytes + address).astype(np.int64).tobytes(order="C"))
            address += int(nbytes.sum())


def write_dataset(prefix: str, values: np.ndarray, sizes: np.ndarray) -> None:
    """One dataset (``prefix.bin``/``.idx``) of ``len(sizes)`` items from their concatenated ``values``;
    written under temporary names, renamed when complete."""
    if int(sizes.sum()) != len(values):
        raise ValueError(f"{prefix}: {len(values)} values for items of {int(sizes.sum())}")
    tmp = prefix + ".tmp"
    with open(indexed_dataset.data_file_path(tmp), "wb") as f:
        f.write(values.tobytes(order="C"))
    write_index(indexed_dataset.index_file_path(tmp), values.dtype, [sizes], len(sizes))
    for src, dst in zip(dataset_files(tmp), dataset_files(prefix)):
        os.replace(src, dst)


def merge_datasets(shard_prefixes: Sequence[str], out_prefix: str, dtype) -> None:
    """Concatenate shard datasets into ``out_prefix`` via temporary files renamed at the end; streaming,
    one shard's index in memory at a time."""
    tmp = out_prefix + ".tmp"
    count = 0
    with open(indexed_dataset.data_file_path(tmp), "wb") as out:
        for p in shard_prefixes:
            index = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(p))
            if index.dtype != np.dtype(dtype).type:
                raise ValueError(f"{p}: dtype {index.dtype} is not {dtype}")
            count += len(index)
            del index
            with open(indexed_dataset.data_file_path(p), "rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    write_index(indexed_dataset.index_file_path(tmp), dtype, _ShardSizes(shard_prefixes), count)
    for src, dst in zip(dataset_files(tmp), dataset_files(out_prefix)):
        os.replace(src, dst)


class _ShardSizes:
    """Iterable (more than once) over the item sizes of each shard's index, read when needed."""

    def __init__(self, prefixes: Sequence[str]):
        self.prefixes = prefixes

    def __iter__(self):
        for p in self.prefixes:
            index = indexed_dataset.MMapIndexedDataset.Index(indexed_dataset.index_file_path(p))
            sizes = np.array(index.sizes)
            del index
            yield sizes
