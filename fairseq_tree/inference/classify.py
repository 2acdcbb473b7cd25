"""Classify sentences with a ``tree_classification`` checkpoint (the library behind ``fairseq-tree-classify``).

:class:`Classifier` loads a checkpoint (and its data directory: dictionaries, ``bpe.codes``,
``classification.json``), turns input trees into samples exactly as ``fairseq-tree-preprocess --task
classification`` does (BPE subtrees, node inputs, targets: :mod:`fairseq_tree.data.class_labels`), runs the
model on batches sorted by length and scores:

* ``accuracy``: % of sentences whose class is right (the root's prediction);
* ``phrase_accuracy``: % of the labelled nodes and leaves (roots included) that are right. Tree models
  classify every unit in one pass; a sentence-only model (``transformer_classifier``) classifies each
  labelled phrase as its own sample (Tai et al. 2015's phrase-level evaluation);
* with the SST-2 view (``binary``) a 5-class model's probabilities are summed into negative (0-1) and
  positive (3-4); units and sentences whose gold class is neutral are not scored.

:meth:`Classifier.attention_share` gives the analysis of the paper's Table 4 for the encoder's
self-attention: per layer, the % of the attention mass of root, node and leaf queries that falls on nodes
(the rest falls on leaves), and the share of nodes among the keys.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

from fairseq_tree.data.binarize import encode
from fairseq_tree.data.class_labels import (
    NO_TARGET,
    SST2_OF_SST5,
    ClassScheme,
    node_inputs,
    tree_targets,
    unit_logits_and_targets,
)
from fairseq_tree.data.tree_classification_dataset import collate_classification, labelled_phrases, phrase_item
from fairseq_tree.inference.batching import length_batches
from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.modules.tree_structure import root_positions
from fairseq_tree.text.bpe import Segmenter
from fairseq_tree.trees import Tree, TreeFormatError, expand_subwords, labelled_tree_from_brackets, tree_from_brackets
from fairseq_tree.utils.progress import Progress

QUERY_GROUPS = ("root", "node", "leaf")


@dataclass
class Example:
    """One input sentence: ``item`` is a dataset sample (see :mod:`fairseq_tree.data.tree_classification_dataset`)
    of its subword tree; ``gold`` the sentence's target (None: no gold label; :data:`NO_TARGET`: no class in
    the view, e.g. a neutral sentence in SST-2)."""

    item: dict
    gold: Optional[int]


class Classifier:
    """A loaded checkpoint. ``device``: ``cpu``, ``cuda`` or ``cuda:N`` (ValueError if unusable here); batches
    hold at most ``max_tokens`` padded leaves + nodes and ``batch_size`` sentences."""

    def __init__(self, path: str, data: Optional[str] = None, device: Optional[str] = None, max_tokens: int = 4096,
                 batch_size: int = 256):

        models, _, task = load_checkpoint(path, data, device, expect=("tree_classification",),
                                          user="fairseq-tree-classify (TreeClassifierModel.from_pretrained)")
        self.model, self.task = models[0], task
        self.max_tokens, self.batch_size = max_tokens, batch_size
        self.info = task.info
        codes = os.path.join(task.cfg.data.split(":")[0], "bpe.codes")
        self.segment = Segmenter(codes if os.path.exists(codes) else None)

    @property
    def device(self) -> torch.device:
        """Where the model is (the hub's ``.to()`` / ``.cuda()`` move it; batches follow)."""
        return next(self.model.parameters()).device

    @property
    def classes(self) -> List[str]:
        return list(self.info["classes"])

    def scheme(self, binary: bool = False) -> ClassScheme:
        """The view gold labels are read in: the model's, or SST-2 (``binary``) for a 5-class model."""
        return ClassScheme(tuple(self.info["input_classes"]), binary or self.info["binary"])

    # ------------------------------------------------------------------ inputs
    def example(self, tree: Tree, scheme: Optional[ClassScheme] = None, sentence_label: Optional[str] = None,
                labelled: bool = False) -> Example:
        """A word-level tree -> an :class:`Example`. ``labelled``: ``tree`` is class-labelled (SST); else a
        ``sentence_label`` (with ``scheme``) is its gold class, or there is none."""

        if labelled and self.info["node_inputs"] == "syntax":
            raise ValueError("the model reads syntactic node labels, which class-labelled trees do not have")
        tree = expand_subwords(tree, self.segment)
        n, m = len(tree.words), len(tree.labels)
        if labelled or sentence_label is not None:
            target, node_t, leaf_t = tree_targets(tree, scheme, None if labelled else sentence_label)
            gold = target
        else:
            target, node_t, leaf_t, gold = NO_TARGET, [NO_TARGET] * m, [NO_TARGET] * n, None
        long = torch.long
        item = {"id": 0, "source": torch.tensor(encode(self.task.source_dictionary, tree.words, False), dtype=long),
                "nodes": torch.tensor(encode(self.task.label_dictionary, node_inputs(tree.labels,
                                                                                     self.info["node_inputs"]),
                                             False), dtype=long),
                "spans": torch.tensor(tree.flat_spans(), dtype=long).view(-1, 2),
                "target": torch.tensor(target, dtype=long), "node_target": torch.tensor(node_t, dtype=long),
                "leaf_target": torch.tensor(leaf_t, dtype=long)}
        return Example(item, gold)

    # ------------------------------------------------------------------ running the model
    def _batches(self, items: Sequence[dict]) -> List[List[int]]:
        """Indices of ``items`` in batches of similar length (leaves + nodes), longest padded size <= max_tokens."""
        sizes = [len(it["source"]) + len(it["nodes"]) for it in items]
        return length_batches(sizes, self.batch_size, max_tokens=self.max_tokens)

    @torch.no_grad()
    def run(self, items: Sequence[dict], return_attention: bool = False) -> Iterator[Tuple[List[int], dict, dict]]:
        """(indices, batch, model output) per batch."""
        pad, label_pad = self.task.source_dictionary.pad(), self.task.label_dictionary.pad()
        for idx in self._batches(items):
            batch = collate_classification([items[i] for i in idx], pad, label_pad)
            net_input = {k: v.to(self.device) for k, v in batch["net_input"].items()}
            extra = {"return_attention": True} if return_attention else {}
            yield idx, batch, self.model(**net_input, **extra)

    def view(self, binary: bool) -> torch.Tensor:
        """[C_model, C_view] 0/1 matrix summing the model's class probabilities into the scored view."""
        C = len(self.classes)
        if not binary or self.info["binary"]:
            return torch.eye(C)
        if C != 5:
            raise ValueError(f"the binary (SST-2) view needs a 5-class model, this one has {C} classes")
        return torch.tensor([[float(SST2_OF_SST5[k] == j) for j in range(2)] for k in range(5)])

    def predict(self, examples: Sequence[Example], binary: bool = False, progress: Optional[str] = None
                ) -> Tuple[torch.Tensor, dict]:
        """-> (the class probabilities of every sentence [N, C_view], in the view; scores with gold labels:
        ``sentences``, ``accuracy``, ``labelled_units``, ``phrase_accuracy``, ``no_class`` (gold neutral in the
        view)). ``progress``: the name of a progress bar / log line."""
        view = self.view(binary)
        probs, (unit_correct, unit_total) = self._classify([e.item for e in examples], view, progress)
        preds = probs.argmax(-1).tolist()
        gold = [(i, e.gold) for i, e in enumerate(examples) if e.gold is not None]
        if not gold:
            return probs, {}
        if not self.model_has_units():
            unit_correct, unit_total = self._phrase_counts(examples, view)
        scored = [(i, g) for i, g in gold if g != NO_TARGET]
        correct = sum(preds[i] == g for i, g in scored)
        return probs, {"sentences": len(scored), "accuracy": round(100.0 * correct / max(len(scored), 1), 2),
                       "labelled_units": unit_total,
                       "phrase_accuracy": round(100.0 * unit_correct / max(unit_total, 1), 2),
                       "no_class": len(gold) - len(scored)}

    def probabilities(self, examples: Sequence[Example], binary: bool = False, progress: Optional[str] = None
                      ) -> torch.Tensor:
        """[N, C_view] class probabilities of every sentence (the model's, summed into the SST-2 view with
        ``binary``), fp32 on the CPU; ``progress``: the name of a progress bar / log line."""
        return self._classify([e.item for e in examples], self.view(binary), progress)[0]

    def _classify(self, items: Sequence[dict], view: torch.Tensor, progress: Optional[str] = None
                  ) -> Tuple[torch.Tensor, Tuple[int, int]]:
        """Sentence probabilities [N, C_view] in the view, and (correct, scored) labelled units of a tree model."""
        probs = torch.zeros(len(items), view.shape[1])
        correct = total = 0
        bar = Progress(progress, len(items)) if progress else None
        for idx, batch, out in self.run(items):
            if bar:
                bar.update(len(idx))
            probs[idx] = torch.softmax(out["sentence"].float().cpu(), -1) @ view
            if out.get("nodes") is not None:
                c, t = _unit_counts(out, batch, view)
                correct, total = correct + c, total + t
        if bar:
            bar.close()
        return probs, (correct, total)

    def _phrase_counts(self, examples: Sequence[Example], view: torch.Tensor) -> Tuple[int, int]:
        """(correct, scored) labelled units of a sentence-only model: every labelled phrase classified as its own
        sample (:func:`phrase_item`); phrases with no class in the view are not scored."""
        phrases = [phrase_item(e.item, s, t, 0) for e in examples
                   for s, t, _ in zip(*labelled_phrases(e.item["spans"].numpy(), e.item["node_target"].numpy(),
                                                        e.item["leaf_target"].numpy()))]
        preds = self._classify(phrases, view)[0].argmax(-1).tolist()
        return sum(int(p == int(it["target"])) for p, it in zip(preds, phrases)), len(phrases)

    def model_has_units(self) -> bool:
        """Whether the model classifies every node and leaf (tree models) or sentences only."""
        return bool(getattr(self.model, "CLASSIFIES_UNITS", False))

    # ------------------------------------------------------------------ Table 4
    def attention_share(self, examples: Sequence[Example]) -> dict:
        """% of the attention mass that root, node and leaf queries put on node keys (the rest on leaves), per
        encoder layer and over all layers (mean over heads and queries; a one-word sentence's leaf is its
        root), and ``key_nodes_pct``: the share of nodes among the real positions."""
        if not self.model_has_units():
            raise ValueError("attention shares need a tree model (tree_classifier)")
        sums = counts = None
        keys = np.zeros(2)
        for _, _, out in self.run([e.item for e in examples], return_attention=True):
            s, c, k = _attention_counts(out)
            sums, counts = (s, c) if sums is None else (sums + s, counts + c)
            keys += k
        pct = 100.0 * sums / np.maximum(counts, 1)  # [L, groups]
        overall = 100.0 * sums.sum(0) / np.maximum(counts.sum(0), 1)
        return {"key_nodes_pct": round(100.0 * keys[1] / keys.sum(), 2),
                "layers": [dict(zip(QUERY_GROUPS, np.round(row, 2).tolist())) for row in pct],
                "overall": dict(zip(QUERY_GROUPS, np.round(overall, 2).tolist()))}


def _unit_counts(out: dict, batch: dict, view: torch.Tensor) -> Tuple[int, int]:
    """Correct and scored labelled units (leaves and nodes) of one batch, predictions in the view."""
    logits, targets = unit_logits_and_targets({k: v.cpu() for k, v in out.items() if k in ("leaves", "nodes")},
                                              batch)
    pred = (torch.softmax(logits.float(), -1) @ view).argmax(-1)
    labelled = targets.ne(NO_TARGET)
    return int((pred.eq(targets) & labelled).sum()), int(labelled.sum())


def _attention_counts(out: dict) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Summed node shares and query counts [L, 3] (root, node, leaf queries) of one batch, and the numbers of
    real leaf and node keys [2]. Vectorised over the batch and queries."""
    tree = out["tree"]
    N = tree.num_leaves
    real = tree.real_mask  # [B, T]
    is_root = torch.zeros_like(real)
    is_root.scatter_(1, root_positions(tree)[:, None], True)
    is_node = torch.zeros_like(real)
    is_node[:, N:] = True
    groups = [is_root, real & is_node & ~is_root, real & ~is_node & ~is_root]
    sums = np.zeros((len(out["attention"]), len(groups)))
    counts = np.zeros_like(sums)
    for layer, probs in enumerate(out["attention"]):  # [H, B, T, T]
        on_nodes = probs.float()[..., N:].sum(-1).mean(0)  # [B, T]
        for g, mask in enumerate(groups):
            sums[layer, g] = float(on_nodes[mask].sum())
            counts[layer, g] = float(mask.sum())
    keys = np.array([float(tree.leaf_mask.sum()), float(tree.node_mask.sum())])
    return sums, counts, keys


class InputError(ValueError):
    """Bad input sentence number ``index`` (0-based) of a list: the CLI names its file and line."""

    def __init__(self, index: int, message: str):
        super().__init__(f"sentence {index + 1}: {message}")
        self.index, self.message = index, message


def detect_format(text: str, scheme: ClassScheme) -> str:
    """``sst`` (a class-labelled tree), ``brackets`` (a syntactic tree) or ``raw`` (text), from one sentence."""

    if not text.startswith("("):
        return "raw"
    try:
        labelled_tree_from_brackets(text, scheme.names)
        return "sst"
    except TreeFormatError:
        return "brackets"


def examples_from_texts(clf: Classifier, texts: Sequence[str], scheme: ClassScheme, input_format: str = "auto",
                        parse: Optional[Callable[[List[str]], List[str]]] = None,
                        labels: Optional[Sequence[str]] = None) -> Tuple[List[Example], str]:
    """Sentences -> (examples, format). ``input_format``: sst, brackets, raw (``parse``: raw texts -> bracketed
    trees) or auto (:func:`detect_format` of the first sentence); ``labels``: gold classes of brackets/raw
    input. :class:`InputError` names the sentence of a bad input."""

    fmt = input_format if input_format != "auto" else detect_format(texts[0], scheme)
    if fmt == "sst" and labels:
        raise ValueError("class-labelled (sst) input carries its own gold labels: no --labels")
    if fmt == "raw":
        if parse is None:
            raise ValueError("raw text input needs a parser")
        texts = parse(list(texts))
    examples = []
    for k, (text, label) in enumerate(zip(texts, labels or [None] * len(texts))):
        try:
            if fmt == "sst":
                examples.append(clf.example(labelled_tree_from_brackets(text, scheme.names), scheme, labelled=True))
            else:
                examples.append(clf.example(tree_from_brackets(text, unary=clf.info["unary"]), scheme, label))
        except (TreeFormatError, ValueError) as e:
            raise InputError(k, str(getattr(e, "message", e))) from None
    return examples, fmt

__all__ = ["Classifier", "Example", "InputError", "QUERY_GROUPS", "detect_format", "examples_from_texts"]
