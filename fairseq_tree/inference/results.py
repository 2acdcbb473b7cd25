"""What the hubs return, one type per call, and what the CLIs write with ``--format jsonl`` (``to_json()``):

* ``translate`` -> :class:`Translation`: the detokenized text (a ``str``) with ``score`` (the hypothesis's
  length-normalised log-probability, base 2 as fairseq-generate prints it) and ``tokens`` (the target's subwords);
* ``classify`` -> :class:`Classification`: the class name (a ``str``) with ``probabilities`` (class -> p, in the
  view asked for: SST-2's two classes with ``binary``);
* ``parse`` -> :class:`fairseq_tree.trees.Tree` (``str()``: one line of brackets; ``heads``, ``relations``, ``tags``);
* ``induce`` -> :class:`InducedStructure`: the words, the unlabeled tree (half-open spans and brackets) and, for
  StructFormer, the heads.

Translations and classes are ``str`` subclasses, so code that compares them with strings keeps working."""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple


class Translation(str):
    """A translation: the text, and ``score`` / ``tokens`` of the hypothesis it comes from."""

    score: float
    tokens: List[str]

    def __new__(cls, text: str, score: float, tokens: List[str]):
        self = super().__new__(cls, text)
        self.score, self.tokens = float(score), list(tokens)
        return self

    def to_json(self) -> dict:
        return {"translation": str(self), "score": round(self.score, 4), "tokens": self.tokens}


class Classification(str):
    """A sentence's class name, and ``probabilities`` of every class of the view (summing to 1)."""

    probabilities: Dict[str, float]

    def __new__(cls, label: str, probabilities: Dict[str, float]):
        self = super().__new__(cls, label)
        self.probabilities = dict(probabilities)
        return self

    @property
    def label(self) -> str:
        return str(self)

    def to_json(self) -> dict:
        return {"label": str(self), "probabilities": {k: round(v, 6) for k, v in self.probabilities.items()}}


@dataclass
class InducedStructure:
    """An induced structure over ``words``: ``spans`` (half-open, the unlabeled tree's constituents of two or
    more words), ``tree`` (the same as one line of brackets, every node and preterminal ``X``, which
    ``--parser given`` reads back) and ``heads`` (each word's head, 1-based, 0 = root; None for models that
    induce no dependencies)."""

    words: List[str]
    spans: List[Tuple[int, int]]
    tree: str
    heads: Optional[List[int]] = None

    def __str__(self) -> str:
        return self.tree

    def to_json(self) -> dict:
        out = {"words": self.words, "spans": [list(s) for s in self.spans], "tree": self.tree}
        if self.heads is not None:
            out["heads"] = self.heads
        return out


__all__ = ["Classification", "InducedStructure", "Translation"]
