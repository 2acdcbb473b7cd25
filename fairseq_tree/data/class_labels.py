"""Classes for tree classification: the class scheme (names, the SST-2 view), the targets of a tree and
its node inputs. Used alike by ``fairseq-tree-preprocess --task classification`` and ``fairseq-tree-classify``.

Two sources of labels (``--labels``):

* ``nodes``: class-labelled trees, SST format (:func:`fairseq_tree.trees.labelled_tree_from_brackets`): the
  tree's ``labels`` and ``tags`` are class names. Targets: every node has the class of its bracket (a
  collapsed unary chain: its top label), every word the class of its preterminal, the sentence the root's.
  A word split into k > 1 pieces (BPE, or SST's tokens with a non-breaking space such as ``8 1/2``) becomes
  a node spanning the pieces (Nguyen et al. 2020, Fig. 7) that carries the word's class, and its pieces
  carry none: the labelled units are the same with and without BPE.
* ``file``: one label per line beside the text (fairseq's ``sentence_prediction`` layout); the tree comes
  from a parser. Only the sentence has a target; it is also the target of the root (the last node in
  post-order; a one-word sentence: its leaf, or its BPE node).

The SST-2 view (``binary``, Socher et al. 2013; Tai et al. 2015): classes 0-1 are ``negative``, 3-4
``positive``, 2 (neutral) has no target; a sentence whose root is neutral is dropped (and counted).

Node inputs never carry a target: every node reads the one symbol :data:`NODE_SYMBOL`, or with
``node_inputs='syntax'`` the parser's constituent labels (and POS tags on BPE nodes, as in translation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch

from fairseq_tree.trees import BPE_SUFFIX, NO_CLASS, WRAPPER_LABELS, Tree

NODE_SYMBOL = "X"
CLASSIFICATION_JSON = "classification.json"  # in a data directory: classes, input classes, binary, node inputs
NO_TARGET = -1
SST2_NAMES = ("negative", "positive")
SST2_OF_SST5 = (0, 0, NO_TARGET, 1, 1)
NODE_INPUTS = ("symbol", "syntax")


@dataclass(frozen=True)
class ClassScheme:
    """``names``: the class names of the input labels (index = class); ``binary``: the SST-2 view of 5 classes."""

    names: Tuple[str, ...]
    binary: bool = False

    def __post_init__(self):
        bad = [n for n in self.names if not n or n in WRAPPER_LABELS or n == NO_CLASS
               or any(c.isspace() or c in "()" for c in n)]
        if bad:
            raise ValueError(f"class names must be non-empty, without spaces or brackets, and not "
                             f"{sorted(WRAPPER_LABELS - {''})} or {NO_CLASS!r}: {bad}")
        if len(set(self.names)) != len(self.names) or len(self.names) < 2:
            raise ValueError(f"need at least two distinct class names, got {list(self.names)}")
        if self.binary and len(self.names) != 5:
            raise ValueError(f"the binary (SST-2) view maps 5 classes, not {len(self.names)}")

    @classmethod
    def make(cls, num_classes: int = 5, names: Optional[str] = None, binary: bool = False) -> "ClassScheme":
        """From ``--num-classes N`` (names 0..N-1) or ``--class-names a,b,c``."""
        return cls(tuple(names.split(",")) if names else tuple(str(i) for i in range(num_classes)), binary)

    @property
    def classes(self) -> Tuple[str, ...]:
        """Names of the model's classes (after the view)."""
        return SST2_NAMES if self.binary else self.names

    def target(self, name: str) -> int:
        """Class index of an input label after the view (:data:`NO_TARGET`: neutral in the binary view, or
        not a class name)."""
        try:
            k = self.names.index(name)
        except ValueError:
            return NO_TARGET
        return SST2_OF_SST5[k] if self.binary else k

    def check_label(self, text: str) -> str:
        """A label line of a label file -> the class name; ``ValueError`` if it is not one."""
        name = text.strip()
        if name not in self.names:
            raise ValueError(f"label {name!r} is not a class ({', '.join(self.names)})")
        return name

    def to_json(self, **extra) -> str:
        return json.dumps({"classes": list(self.classes), "input_classes": list(self.names),
                           "binary": self.binary, **extra}, indent=1) + "\n"


def is_piece(words: Sequence[str]) -> List[bool]:
    """[n]: leaf j is a piece of a word split by BPE (``study@@ ing``: both)."""
    return [w.endswith(BPE_SUFFIX) or (j > 0 and words[j - 1].endswith(BPE_SUFFIX)) for j, w in enumerate(words)]


def tree_targets(tree: Tree, scheme: ClassScheme, sentence_label: Optional[str] = None
                 ) -> Tuple[int, List[int], List[int]]:
    """-> (sentence target, node targets [m] aligned with ``tree.labels`` (post-order), leaf targets [n]),
    :data:`NO_TARGET` where a unit has none.

    ``sentence_label`` None: ``tree`` is class-labelled (``labels``/``tags`` are class names; a BPE piece
    has no target, its word's class is on the BPE node). Otherwise the tree is syntactic and only the
    sentence, i.e. its root, has a target."""
    n, m = len(tree.words), len(tree.labels)
    if sentence_label is None:
        nodes = [scheme.target(x) for x in tree.labels]
        leaves = [NO_TARGET if p else scheme.target(t) for p, t in zip(is_piece(tree.words), tree.tags)]
    else:
        nodes, leaves = [NO_TARGET] * m, [NO_TARGET] * n
        (nodes if m else leaves)[-1 if m else 0] = scheme.target(sentence_label)
    return (nodes[-1] if m else leaves[0]), nodes, leaves


def node_inputs(labels: Sequence[str], mode: str) -> List[str]:
    """The node labels the model reads [m] for a tree's ``labels`` [m]: :data:`NODE_SYMBOL` everywhere, or
    (``syntax``) the syntactic labels themselves."""
    if mode not in NODE_INPUTS:
        raise ValueError(f"node inputs must be one of {NODE_INPUTS}, not {mode!r}")
    return list(labels) if mode == "syntax" else [NODE_SYMBOL] * len(labels)


def unit_logits_and_targets(net_output: dict, sample: dict):
    """([B, N + M, C] logits of leaves then nodes, [B, N + M] targets), or (None, None) for a model that
    classifies sentences only."""
    if net_output.get("nodes") is None:
        return None, None
    logits = torch.cat([net_output["leaves"], net_output["nodes"]], 1)
    return logits, torch.cat([sample["leaf_target"], sample["node_target"]], 1)


__all__ = ["ClassScheme", "CLASSIFICATION_JSON", "NODE_SYMBOL", "NO_TARGET", "NODE_INPUTS", "is_piece", "tree_targets",
           "node_inputs", "unit_logits_and_targets"]
