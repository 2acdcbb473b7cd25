"""Task ``tree_classification``: classify sentences from their trees (Nguyen et al., ICLR 2020, Section 5.2:
the Stanford Sentiment Treebank, SST-5 and SST-2), with the class of every labelled node and leaf as extra
targets ("we optimize every sentiment label provided in the dataset", Appendix 7.4).

Data: a directory written by ``fairseq-tree-preprocess --task classification`` (``dict.SRC.txt``,
``dict.SRC.labels.txt``, ``classification.json`` with the class names, and per split
``{split}.SRC-None.SRC{,.nodes,.spans,.target,.node_target,.leaf_target}.{bin,idx}``). Batches carry
``net_input`` = ``src_tokens`` [B, N], ``src_lengths`` [B], ``src_nodes`` [B, M], ``src_spans`` [B, M, 2] and the
targets ``target`` [B], ``node_target`` [B, M], ``leaf_target`` [B, N] (-1: no target); ``--max-tokens`` and
``--max-positions`` count leaves + nodes.

Loss: every labelled node and leaf, or with ``--root-only`` the sentence only. Models: ``tree_classifier*`` (the
tree2seq encoder + a classification head on every node and leaf) and the ``transformer_classifier*`` baseline
(fairseq's TransformerEncoder over the leaves). Criterion ``tree_classification`` (the default): validation logs
``accuracy`` (sentences, i.e. roots) and, for models
that classify every node, ``phrase_accuracy`` (every labelled node and leaf): select checkpoints with
``--best-checkpoint-metric accuracy --maximize-best-checkpoint-metric``.

``--phrase-samples``: the training split becomes every labelled node and leaf as its own sample (the phrase's
leaves and subtree, the phrase's class as the sentence target): Tai et al. (2015)'s protocol for sequence
models. Validation and test stay sentences.
"""

import json
import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.data import Dictionary, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task
from omegaconf import II

from fairseq_tree.criterions import tree_classification as _criterion  # noqa: F401  (registers the criterion)
from fairseq_tree.data.class_labels import CLASSIFICATION_JSON
from fairseq_tree.data.tree_classification_dataset import PhraseDataset, TreeClassificationDataset
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.tasks.data_paths import record_absolute_data, split_data_path
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences

logger = logging.getLogger(__name__)

TARGETS = ("target", "node_target", "leaf_target")


@dataclass
class TreeClassificationConfig(FairseqDataclass):
    data: Optional[str] = field(default=None, metadata={
        "help": "directory written by fairseq-tree-preprocess --task classification"})
    source_lang: Optional[str] = field(default=None, metadata={
        "help": "SRC of the data's file names (default: inferred from dict.SRC.labels.txt)"})
    max_positions: int = field(default=1024, metadata={"help": "longest sample in leaves + nodes"})
    root_only: bool = field(default=False, metadata={
        "help": "loss on the sentence (root) class only; default: on every labelled node and leaf (the paper)"})
    phrase_samples: bool = field(default=False, metadata={
        "help": "train on every labelled node and leaf as its own sample (Tai et al. 2015's protocol for "
                "sequence models); validation stays sentences"})
    train_subset: str = II("dataset.train_subset")


def infer_source_lang(data: str) -> str:
    """SRC from the one ``dict.SRC.labels.txt`` in ``data``."""
    langs = sorted(f[len("dict."):-len(".labels.txt")] for f in os.listdir(data)
                   if f.startswith("dict.") and f.endswith(".labels.txt"))
    if len(langs) != 1:
        raise FileNotFoundError(f"{data}: expected one dict.SRC.labels.txt, found {langs} "
                                f"(is it a fairseq-tree-preprocess --task classification directory?)")
    return langs[0]


@register_task("tree_classification", dataclass=TreeClassificationConfig)
class TreeClassificationTask(KeepsLeftoverSentences, CriterionCheck, FairseqTask):
    cfg: TreeClassificationConfig
    COMPATIBLE_CRITERIA = ("tree_classification",)
    DEFAULT_CRITERION = "tree_classification"

    def __init__(self, cfg: TreeClassificationConfig, src_dict: Dictionary, label_dict: Dictionary, info: dict):
        super().__init__(cfg)
        self.src_dict, self.label_dict, self.info = src_dict, label_dict, info

    @classmethod
    def setup_task(cls, cfg: TreeClassificationConfig, **kwargs):
        record_absolute_data(cfg)  # the checkpoint's dictionaries, from any working directory
        data = cfg.data.split(":")[0]
        cfg.source_lang = cfg.source_lang or infer_source_lang(data)
        paths = [os.path.join(data, f"dict.{cfg.source_lang}.txt"),
                 os.path.join(data, f"dict.{cfg.source_lang}.labels.txt"), os.path.join(data, CLASSIFICATION_JSON)]
        for p in paths:
            if not os.path.exists(p):
                raise FileNotFoundError(f"{p}: missing (run fairseq-tree-preprocess --task classification)")
        with open(paths[2], encoding="utf-8") as f:
            info = json.load(f)
        src_dict, label_dict = Dictionary.load(paths[0]), Dictionary.load(paths[1])
        logger.info("dictionary: %d types, %d node labels; classes %s", len(src_dict), len(label_dict),
                    info["classes"])
        return cls(cfg, src_dict, label_dict, info)

    @property
    def source_dictionary(self):
        return self.src_dict

    @property
    def target_dictionary(self):
        """None: the targets are classes (fairseq 0.12.2's base raises NotImplementedError here, which
        ``FairseqCriterion.__init__``'s ``hasattr`` does not catch)."""
        return None

    @property
    def label_dictionary(self):
        return self.label_dict

    @property
    def classes(self) -> List[str]:
        return list(self.info["classes"])

    @property
    def num_classes(self) -> int:
        return len(self.info["classes"])

    def max_positions(self):
        return self.cfg.max_positions

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        data = split_data_path(self.cfg.data, split, self.cfg.train_subset, epoch)
        src = self.cfg.source_lang
        prefix = os.path.join(data, f"{split}.{src}-None.{src}")
        parts = {}
        for key, suffix in (("leaves", ""), ("nodes", ".nodes"), ("spans", ".spans"),
                            *((k, "." + k) for k in TARGETS)):
            parts[key] = data_utils.load_indexed_dataset(prefix + suffix, None, "mmap")
            if parts[key] is None:
                raise FileNotFoundError(f"{prefix}{suffix}.{{bin,idx}} missing")
        dataset = TreeClassificationDataset(*parts.values(), pad_idx=self.src_dict.pad(),
                                            label_pad_idx=self.label_dict.pad(), shuffle=(split != "test"))
        if self.cfg.phrase_samples and split == self.cfg.train_subset:
            dataset = PhraseDataset(dataset)
            logger.info("%s: %d labelled phrases as samples (--phrase-samples)", split, len(dataset))
        self.datasets[split] = dataset
        return dataset


__all__ = ["TreeClassificationTask", "TreeClassificationConfig", "infer_source_lang"]
