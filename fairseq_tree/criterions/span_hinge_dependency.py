"""``span_hinge_dependency``: L = L_c + w * L_d (Mrini et al. 2020, eqs. 9, 11, 12; w = 1 in the paper).

L_c (eq. 9) per sentence: ``max(0, max_T [s(T) + Delta(T, T*)] - s(T*))`` with the maximisation done by
batched, Hamming-cost-augmented CKY (:func:`fairseq_tree.modules.chart.cky`); the gradient flows through the
scores of the predicted and gold trees' labeled spans. L_d: cross-entropy of the gold head of every word over
all heads of its sentence, plus cross-entropy of the gold relation given the gold head (eq. 11). Both summed
over sentences; sample_size = sentences. Models trained ``--no-pos-tags`` also learn to predict the POS tags
they write out (cross-entropy, ``--tag-weight``; not in the paper, whose tags are inputs).

In validation (model.eval()) it also decodes without augmentation (CKY, Eisner) and logs labeled span F1 over
raw spans (``f1``) and UAS over all tokens (``uas``) for checkpoint selection.
"""

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from fairseq_tree.modules.chart import cky, eisner, tree_score


@dataclass
class SpanHingeDependencyConfig(FairseqDataclass):
    dependency_weight: float = field(default=1.0, metadata={"help": "w in L = L_c + w L_d (0: constituents only)"})
    tag_weight: float = field(default=1.0, metadata={
        "help": "weight of the POS-tagging cross-entropy of --no-pos-tags models (they output predicted tags)"})
    margin: float = field(default=1.0, metadata={"help": "cost of each wrongly labeled span in the augmentation"})


@register_criterion("span_hinge_dependency", dataclass=SpanHingeDependencyConfig)
class SpanHingeDependencyCriterion(FairseqCriterion):
    def __init__(self, task, dependency_weight=1.0, tag_weight=1.0, margin=1.0):
        super().__init__(task)
        self.dependency_weight, self.tag_weight, self.margin = dependency_weight, tag_weight, margin

    def forward(self, model, sample, reduce=True):
        out = model(**sample["net_input"])
        lengths = sample["net_input"]["src_lengths"]
        scores = out["label_scores"]
        gold = sample["gold_spans"]
        pred, aug = cky(scores, lengths, sample["gold_chart"], cost=self.margin)
        pred_score = tree_score(scores, pred)
        cost = aug.to(pred_score) - pred_score.detach()  # Delta(T_hat, T*), a constant
        loss_c = (pred_score + cost - tree_score(scores, gold)).clamp(min=0).sum()
        loss = loss_c
        log = {"loss_c": loss_c.item(), "nsentences": sample["nsentences"], "ntokens": sample["ntokens"],
               "sample_size": sample["nsentences"]}
        has_dep = "heads" in sample and self.dependency_weight > 0
        if has_dep:
            heads, rels = sample["heads"], sample["rels"]
            words = torch.arange(heads.size(1), device=heads.device)[None, :]
            wmask = (words >= 1) & (words <= lengths[:, None])
            arc_ce = F.cross_entropy(out["arc_scores"][wmask], heads[wmask], reduction="sum")
            rel_ce = F.cross_entropy(model.rel_scores(out, heads)[wmask], rels[wmask], reduction="sum")
            loss_d = arc_ce + rel_ce
            loss = loss + self.dependency_weight * loss_d
            log["loss_d"] = loss_d.item()
        if out.get("tag_scores") is not None:  # --no-pos-tags models predict the tags they output
            tgt = sample["net_input"]["src_tags"][:, 1:-1]
            tmask = torch.arange(tgt.size(1), device=tgt.device)[None, :] < lengths[:, None]
            loss_t = F.cross_entropy(out["tag_scores"][tmask], tgt[tmask], reduction="sum")
            loss = loss + self.tag_weight * loss_t
            log["loss_t"] = loss_t.item()
        if not model.training:
            with torch.no_grad():
                decoded, _ = cky(scores, lengths)
                m = sum(len(set(p) & set(g)) for p, g in zip(decoded, gold))
                log.update(span_match=m, span_pred=sum(map(len, decoded)), span_gold=sum(map(len, gold)))
                if has_dep:
                    ph, _ = eisner(out["arc_scores"].transpose(1, 2), lengths)
                    pr = model.rel_scores(out, ph).argmax(-1)
                    ok = ph.eq(heads) & wmask
                    log.update(arc_correct=int(ok.sum()), rel_correct=int((ok & pr.eq(rels)).sum()),
                               arc_total=int(wmask.sum()))
        log["loss"] = loss.item()
        return loss, sample["nsentences"], log

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def tot(k):
            return sum(log.get(k, 0) for log in logging_outputs)

        ss = max(tot("sample_size"), 1)
        metrics.log_scalar("loss", tot("loss") / ss, ss, round=3)
        metrics.log_scalar("loss_c", tot("loss_c") / ss, ss, round=3)
        for k in ("loss_d", "loss_t"):
            if any(k in log for log in logging_outputs):
                metrics.log_scalar(k, tot(k) / ss, ss, round=3)
        for k in ("span_match", "span_pred", "span_gold", "arc_correct", "rel_correct", "arc_total"):
            if any(k in log for log in logging_outputs):
                metrics.log_scalar_sum("_" + k, tot(k))
        if any("span_match" in log for log in logging_outputs):
            metrics.log_derived("f1", lambda m: round(200.0 * m["_span_match"].sum / max(
                m["_span_pred"].sum + m["_span_gold"].sum, 1), 2))
        if any("arc_total" in log for log in logging_outputs):
            metrics.log_derived("uas", lambda m: round(100.0 * m["_arc_correct"].sum / max(m["_arc_total"].sum, 1), 2))
            metrics.log_derived("las", lambda m: round(100.0 * m["_rel_correct"].sum / max(m["_arc_total"].sum, 1), 2))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
