"""What every pass of the pipeline shares: the work unit (:class:`Shard`), its fatal error, the per-shard list of
skipped lines (:class:`LineErrors`), reading a shard's lines, the ``.json`` that marks a shard done, the compact
tree rows of the work directory and the shard's dataset names.

A shard is a run of consecutive input lines. Each stage reads the previous stage's shard file from the work
directory and writes its own (temporary name, renamed when complete, then a ``.json`` with counts and timings
written last: its presence marks the shard as done, which makes reruns resume). Intermediate rows are
tab-separated; a *compact tree* is four fields ``words<TAB>tags<TAB>labels<TAB>spans`` (space-separated within a
field, spans flattened).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, List

from fairseq_tree.trees import Tree
from fairseq_tree.trees.io import atomic_copy, atomic_path, atomic_write_text  # noqa: F401  (re-exported)

#: classification targets, one dataset each (``{split}.SRC-None.SRC.{key}``), int16 with -1 = no target:
#: the sentence's class [1], the class of every node [m] (post-order, as ``.nodes``) and of every leaf [n]
TARGET_KEYS = ("target", "node_target", "leaf_target")
TARGET_DTYPE = "int16"


class PreprocessError(Exception):
    """A fatal input error; the message names the file and line."""


@dataclass
class Shard:
    split: str
    index: int
    first_line: int  # 1-based number of the shard's first line in the input files
    num_lines: int
    offsets: Dict[str, int]  # byte offset of the first line, per input role (src, tgt, trees)

    @property
    def name(self) -> str:
        return f"{self.split}.{self.index:05d}"


def read_lines(path: str, offset: int, count: int) -> List[bytes]:
    lines = []
    with open(path, "rb") as f:
        f.seek(offset)
        for _ in range(count):
            line = f.readline()
            if not line:
                break
            lines.append(line.rstrip(b"\r\n"))
    return lines


def write_meta(path: str, meta: dict) -> None:
    atomic_write_text(path, json.dumps(meta))


def tree_to_compact(tree: Tree) -> str:
    return "\t".join([
        " ".join(tree.words), " ".join(t or "X" for t in tree.tags), " ".join(tree.labels),
        " ".join(map(str, tree.flat_spans())),
    ])


def compact_to_tree(fields: List[str]) -> Tree:
    words = fields[0].split(" ")
    tags = fields[1].split(" ")
    labels = fields[2].split(" ") if fields[2] else []
    flat = [int(x) for x in fields[3].split(" ")] if fields[3] else []
    return Tree(words, tags, labels, list(zip(flat[0::2], flat[1::2])))


def shard_dataset_prefixes(workdir: str, shard: Shard) -> Dict[str, str]:
    """The prefixes of a shard's datasets in the work directory, by output key (those a codec writes exist)."""
    base = os.path.join(workdir, shard.name)
    return {k: f"{base}.{k}" for k in ("leaves", "nodes", "spans", "tgt") + TARGET_KEYS}


class LineErrors:
    """Collects skipped lines, or raises at the first error when on_error == 'fail'."""

    def __init__(self, on_error: str):
        self.on_error = on_error
        self.skipped: List[dict] = []
        self.filtered: List[dict] = []

    @staticmethod
    def _entry(path: str, lineno: int, reason: str, message: str) -> dict:
        return {"file": path, "line": lineno, "reason": reason,
                "message": message.replace("\t", " ").replace("\n", " ")}

    def add(self, path: str, lineno: int, reason: str, message: str) -> None:
        if self.on_error == "fail":
            raise PreprocessError(f"{path}:{lineno}: {message} [{reason}]")
        self.skipped.append(self._entry(path, lineno, reason, message))

    def filter(self, path: str, lineno: int, reason: str, message: str) -> None:
        """A good line left out by design (the neutral roots of --binary): always recorded, never fatal."""
        self.filtered.append(self._entry(path, lineno, reason, message))
