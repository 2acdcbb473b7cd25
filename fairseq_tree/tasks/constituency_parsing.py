"""Task ``constituency_parsing``: supervised constituency (+ dependency) parsing, the LAL parser's task
(Mrini et al. 2020).

Data: a directory written by ``fairseq-tree-parsing-data`` (see that module for the files).
Dependencies are used when ``{split}.heads``/``.rels`` exist. Validation decodes (CKY + Eisner) and logs
labeled span F1 (``f1``, raw labeled spans, no EVALB rules: for model selection) and UAS (``uas``, all
tokens): train with ``--best-checkpoint-metric f1 --maximize-best-checkpoint-metric``. Exact EVALB scores
come from ``fairseq-tree-parse`` (:mod:`fairseq_tree.cli.parse`).
"""

import logging
import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from fairseq.data import Dictionary, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import FairseqTask, register_task

from fairseq_tree.criterions import span_hinge_dependency  # noqa: F401  (registers the criterion)
from fairseq_tree.data.parsing_dataset import ParsingDataset, collate, encode_sentence
from fairseq_tree.tasks.criterion_check import CriterionCheck
from fairseq_tree.tasks.leftovers import KeepsLeftoverSentences

logger = logging.getLogger(__name__)

DICTS = ("words", "tags", "chars", "labels", "rels")


@dataclass
class ConstituencyParsingConfig(FairseqDataclass):
    data: Optional[str] = field(default=None, metadata={"help": "directory written by fairseq_tree.data.parsing_data"})
    max_positions: int = field(default=512, metadata={"help": "longest sentence in tokens (words + 2)"})


@register_task("constituency_parsing", dataclass=ConstituencyParsingConfig)
class ConstituencyParsingTask(KeepsLeftoverSentences, CriterionCheck, FairseqTask):
    cfg: ConstituencyParsingConfig
    COMPATIBLE_CRITERIA = ("span_hinge_dependency",)
    DEFAULT_CRITERION = "span_hinge_dependency"

    def __init__(self, cfg, dicts):
        super().__init__(cfg)
        self.dicts = dicts

    @classmethod
    def load_dicts(cls, data: str) -> dict:
        dicts = {}
        for k in DICTS:
            path = os.path.join(data, f"dict.{k}.txt")
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: missing (run fairseq-tree-parsing-data)")
            dicts[k] = Dictionary.load(path)
        return dicts

    @classmethod
    def setup_task(cls, cfg, **kwargs):
        dicts = cls.load_dicts(cfg.data)
        logger.info("dictionaries: %s", {k: len(v) for k, v in dicts.items()})
        return cls(cfg, dicts)

    @property
    def source_dictionary(self):
        return self.dicts["words"]

    @property
    def target_dictionary(self):
        return self.dicts["labels"]

    @property
    def num_labels(self) -> int:
        return len(self.dicts["labels"]) - self.dicts["labels"].nspecial

    @property
    def num_relations(self) -> int:
        return len(self.dicts["rels"]) - self.dicts["rels"].nspecial

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        prefix = os.path.join(self.cfg.data, split)
        parts = {k: data_utils.load_indexed_dataset(f"{prefix}.{k}", None, "mmap")
                 for k in ("words", "tags", "chars", "spans", "heads", "rels")}
        for k in ("words", "tags", "chars", "spans"):
            if parts[k] is None:
                raise FileNotFoundError(f"{prefix}.{k}.{{bin,idx}} missing")
        self.datasets[split] = ParsingDataset(parts["words"], parts["tags"], parts["chars"], parts["spans"],
                                              parts["heads"], parts["rels"], self.dicts, shuffle=(split != "test"))

    def max_positions(self):
        return self.cfg.max_positions

    def build_batch(self, sentences: Sequence[Sequence[str]], tags: Optional[Sequence[Sequence[str]]] = None):
        """Raw token lists (and optional POS tags) -> a collated batch for ``model(**batch['net_input'])``."""
        items = [encode_sentence(s, None if tags is None else tags[i], self.dicts) for i, s in enumerate(sentences)]
        for i, it in enumerate(items):
            it["id"] = i
        return collate(items, self.dicts)

    def label_names(self) -> List[str]:
        d = self.dicts["labels"]
        return [d[i] for i in range(d.nspecial, len(d))]

    def relation_names(self) -> List[str]:
        d = self.dicts["rels"]
        return [d[i] for i in range(d.nspecial, len(d))]


__all__ = ["ConstituencyParsingTask", "ConstituencyParsingConfig"]
