"""``tree_classification``: cross-entropy on the classes of sentences and of their labelled nodes and leaves.

The model returns logits for the sentence (its root) [B, C] and, if it classifies every unit, for every leaf
[B, N, C] and node [B, M, C]. Loss (summed):

* default: every labelled unit once, i.e. every node and leaf whose target is not -1 (the root is a node, or a
  one-word sentence's leaf, so the sentence is one of them): "we optimize every sentiment label provided in
  the dataset" (Nguyen et al. 2020, Appendix 7.4); ``sample_size`` = the labelled units;
* ``--root-only`` (a flag of the task): the sentence's class only; ``sample_size`` = the sentences.

Logged: ``loss`` (bits per unit of ``sample_size``, as fairseq's criterions), ``accuracy`` (% of sentences
whose root is classified right) and, for models that classify every unit, ``phrase_accuracy`` (% of the
labelled nodes and leaves, roots included).
"""

import math
from dataclasses import dataclass

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from fairseq_tree.data.class_labels import NO_TARGET, unit_logits_and_targets  # noqa: F401  (re-exported)


@dataclass
class TreeClassificationCriterionConfig(FairseqDataclass):
    """No options of its own: ``--root-only`` is a flag of the task (so that no ``--criterion`` is needed)."""


@register_criterion("tree_classification", dataclass=TreeClassificationCriterionConfig)
class TreeClassificationCriterion(FairseqCriterion):
    def __init__(self, task):
        super().__init__(task)
        self.root_only = bool(getattr(task.cfg, "root_only", False))

    def forward(self, model, sample, reduce=True):
        out = model(**sample["net_input"])
        sentence, target = out["sentence"].float(), sample["target"]
        logits, targets = unit_logits_and_targets(out, sample)
        labelled = targets.ne(NO_TARGET) if targets is not None else None
        if self.root_only:
            loss = F.cross_entropy(sentence, target, reduction="sum")
            sample_size = target.numel()
        elif logits is None:
            raise ValueError(f"{type(model).__name__} classifies sentences only: train it with --root-only "
                             "(and --phrase-samples for Tai et al.'s phrase-level training)")
        else:
            loss = F.cross_entropy(logits[labelled].float(), targets[labelled], reduction="sum")
            sample_size = int(labelled.sum())
        log = {"loss": loss.detach().item(), "sample_size": sample_size, "nsentences": target.numel(),
               "ntokens": sample["ntokens"], "ncorrect": int(sentence.argmax(-1).eq(target).sum())}
        if logits is not None:
            log["phrase_correct"] = int((logits.argmax(-1).eq(targets) & labelled).sum())
            log["phrase_total"] = int(labelled.sum())
        return loss, sample_size, log

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def tot(k):
            return sum(log.get(k, 0) for log in logging_outputs)

        sample_size, nsentences = tot("sample_size"), tot("nsentences")
        metrics.log_scalar("loss", tot("loss") / max(sample_size, 1) / math.log(2), sample_size, round=3)
        if nsentences:
            metrics.log_scalar("accuracy", 100.0 * tot("ncorrect") / nsentences, nsentences, round=2)
        if tot("phrase_total"):
            metrics.log_scalar("phrase_accuracy", 100.0 * tot("phrase_correct") / tot("phrase_total"),
                               tot("phrase_total"), round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


__all__ = ["TreeClassificationCriterion", "unit_logits_and_targets"]
