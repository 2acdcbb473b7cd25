"""Task ``constituency_parsing``: supervised constituency (+ dependency) parsing, the LAL parser's task
(Mrini et al. 2020).

Data: a directory written by ``fairseq-tree-parsing-data`` (see that module for the files).
Dependencies are used when ``{split}.heads``/``.rels`` exist. Validation decodes (CKY + Eisner) and logs
labeled span F1 (``f1``, raw labeled spans, no EVALB rules: for model selection) and UAS (``uas``, all
tokens): train with ``--best-checkpoint-metric f1 --maximize-best-checkpoint-metric``. Exact EVALB scores
come from ``fairseq-tree-parse`` (:mod:`fairseq_tree.cli.parse`).
"""

import json
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
from fairseq_tree.tasks.data_paths import record_absolute_data
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
        self.subwords = None  # the model's words -> subwords function (a pretrained encoder's), set by build_model

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
        record_absolute_data(cfg)  # the checkpoint's dictionaries, from any working directory
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
                                              parts["heads"], parts["rels"], self.dicts, shuffle=(split != "test"),
                                              text=read_text(f"{prefix}.text.jsonl"), subwords=self.subwords)

    def build_model(self, cfg, from_checkpoint=False):
        """The model; a pretrained encoder's tokenizer then reaches the collater of every dataset (loaded or to
        come) and :meth:`build_batch`. The batcher is looked up at collate time, since a checkpoint's tokenizer
        arrives with its state dict, after this."""
        model = super().build_model(cfg, from_checkpoint)
        if getattr(model, "pretrained", None) is not None:
            self.subwords = _ModelSubwords(model)
            for ds in self.datasets.values():
                if isinstance(ds, ParsingDataset):
                    ds.subwords = self.subwords
        return model

    def optimizer_step(self, optimizer, model, update_num):
        """``--pretrained-lr``: the pretrained encoder's parameters step in a param group of their own, whose
        learning rate is the scheduled one times pretrained_lr / lr (see :func:`pretrained_lr_step`)."""
        inner = getattr(model, "module", model)
        ratio = pretrained_lr_ratio(inner)
        if ratio is None:
            return super().optimizer_step(optimizer, model, update_num)
        pretrained_lr_step(optimizer, inner.pretrained_parameters(), ratio)
    def max_positions(self):
        return self.cfg.max_positions

    def build_batch(self, sentences: Sequence[Sequence[str]], tags: Optional[Sequence[Sequence[str]]] = None):
        """Raw token lists (and optional POS tags) -> a collated batch for ``model(**batch['net_input'])``."""
        items = [encode_sentence(s, None if tags is None else tags[i], self.dicts) for i, s in enumerate(sentences)]
        for i, it in enumerate(items):
            it["id"] = i
        return collate(items, self.dicts, self.subwords)

    def label_names(self) -> List[str]:
        d = self.dicts["labels"]
        return [d[i] for i in range(d.nspecial, len(d))]

    def relation_names(self) -> List[str]:
        d = self.dicts["rels"]
        return [d[i] for i in range(d.nspecial, len(d))]


def read_text(path: str) -> Optional[List[List[str]]]:
    """``{split}.text.jsonl`` -> the sentences as word lists, or None when the file is absent (older data)."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class _ModelSubwords:
    """The collater's words -> subwords function, resolved through the model at each call (picklable with it)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, sentences, T):
        return self.model.subword_batcher()(sentences, T)


def pretrained_lr_ratio(model) -> Optional[float]:
    """pretrained_lr / lr of a model trained with ``--pretrained-lr`` (None when there is nothing to scale)."""
    args = getattr(model, "args", None)
    plr = getattr(args, "pretrained_lr", None)
    if plr is None or getattr(model, "pretrained", None) is None or args.pretrained_freeze:
        return None
    lr = args.lr[0] if isinstance(args.lr, (list, tuple)) else args.lr
    return float(plr) / float(lr)


def _torch_optimizer(optimizer):
    """The torch optimizer inside fairseq's wrappers, and the map from a model parameter to the tensor it steps
    (the fp32 master copy under FP16Optimizer without flattening; the parameter itself otherwise)."""
    opt, fp16_params, fp32_params = optimizer, None, None
    for _ in range(4):
        if hasattr(opt, "fp16_params") and fp16_params is None:
            fp16_params, fp32_params = opt.fp16_params, getattr(opt, "fp32_params", None)
        nxt = getattr(opt, "fp32_optimizer", None) or getattr(opt, "wrapped_optimizer", None)
        if nxt is None:
            break
        opt = nxt
    torch_opt = opt.optimizer if hasattr(opt, "optimizer") else opt
    if fp16_params is not None and fp32_params is not None:
        if not isinstance(fp32_params, list):
            raise ValueError("--pretrained-lr with --fp16 needs --fp16-no-flatten-grads (or --memory-efficient-fp16 "
                             "or --bf16): fairseq's flattened fp32 copy has one parameter for the whole model")
        return torch_opt, {id(a): b for a, b in zip(fp16_params, fp32_params)}
    return torch_opt, {}


def pretrained_lr_step(optimizer, pretrained_params, ratio: float) -> None:
    """One ``optimizer.step()`` with the pretrained encoder's parameters moved into a second param group at
    ``ratio`` times the current learning rate, then moved back: the optimizer's state dict keeps fairseq's single
    group (checkpoints resume and average as before) and every schedule (warm-up, decay) applies to both."""
    torch_opt, master = _torch_optimizer(optimizer)
    if len(torch_opt.param_groups) != 1:
        raise ValueError(f"--pretrained-lr expects fairseq's single param group, found {len(torch_opt.param_groups)}")
    group = torch_opt.param_groups[0]
    wanted = {id(master.get(id(p), p)) for p in pretrained_params}
    everything = group["params"]
    mine = [p for p in everything if id(p) in wanted]
    if not mine:
        optimizer.step()
        return
    group["params"] = [p for p in everything if id(p) not in wanted]
    torch_opt.param_groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": mine,
                                   "lr": group["lr"] * ratio})
    try:
        optimizer.step()
    finally:
        torch_opt.param_groups.pop()
        group["params"] = everything


__all__ = ["ConstituencyParsingTask", "ConstituencyParsingConfig"]
