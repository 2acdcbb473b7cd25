"""Labeled bracket P/R/F1 with the EVALB ``COLLINS.prm`` rules, and UAS/LAS without punctuation.

Rules implemented (those of COLLINS.prm that matter for trees without empty elements):

1. ``DELETE_LABEL TOP`` (and our wrapper ``ROOT``, the same thing): such brackets are not counted.
2. ``DELETE_LABEL , : `` '' .``: words whose **gold** POS tag is one of these five are removed from both
   trees before spans are compared; every bracket is re-indexed over the remaining words, and a bracket
   left with no word is dropped. (Other punctuation-like tags, ``-LRB- -RRB- # $``, stay, as in EVALB.)
3. ``DELETE_LABEL -NONE-``: empty elements are already removed by the reader.
4. ``EQ_LABEL ADVP PRT``: PRT is scored as ADVP.
5. Brackets are (label, start, end) in a multiset: a unary chain (our joined ``S+VP``) is one bracket per
   label; preterminals (POS tags) are not brackets; one-word constituents are. Function tags are stripped.
6. Sentences whose word counts differ are an error (EVALB skips them with a length-mismatch message).

Corpus precision = matched / predicted, recall = matched / gold (micro-averaged over sentences); also the
exact-match rate and tagging accuracy. Dependencies: UAS / LAS over words whose gold tag is not one of the
punctuation tags of rule 2 (the usual convention for PTB Stanford dependencies).
"""

from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

PUNCT_TAGS = frozenset([",", ":", "``", "''", "."])
DELETE_LABELS = frozenset(["TOP", "ROOT", "-NONE-"])
EQ_LABELS = {"PRT": "ADVP"}

LabeledSpan = Tuple[int, int, str]


def evalb_brackets(spans: Iterable[LabeledSpan], gold_tags: Sequence[str]) -> Counter:
    """Multiset of (label, start, end) after the rules above; indices count non-punctuation words."""
    keep_before = [0]
    for t in gold_tags:
        keep_before.append(keep_before[-1] + (t not in PUNCT_TAGS))
    out: Counter = Counter()
    for s, e, label in spans:
        a, b = keep_before[s], keep_before[e]
        if a >= b:
            continue
        for part in label.split("+"):
            part = EQ_LABELS.get(part, part)
            if part not in DELETE_LABELS:
                out[(part, a, b)] += 1
    return out


class BracketScorer:
    """Accumulates EVALB-style counts: ``add(gold_spans, pred_spans, gold_tags, pred_tags=None)``."""

    def __init__(self):
        self.match = self.gold = self.pred = self.sentences = self.exact = 0
        self.tags_ok = self.tags_total = 0

    def add(self, gold_spans, pred_spans, gold_tags: Sequence[str], pred_tags: Optional[Sequence[str]] = None):
        if pred_tags is not None and len(pred_tags) != len(gold_tags):
            raise ValueError(f"length mismatch: {len(pred_tags)} predicted vs {len(gold_tags)} gold words")
        g, p = evalb_brackets(gold_spans, gold_tags), evalb_brackets(pred_spans, gold_tags)
        m = sum((g & p).values())
        self.match += m
        self.gold += sum(g.values())
        self.pred += sum(p.values())
        self.sentences += 1
        self.exact += int(g == p)
        if pred_tags is not None:
            self.tags_ok += sum(a == b for a, b in zip(gold_tags, pred_tags))
            self.tags_total += len(gold_tags)
        return m

    def result(self) -> Dict[str, float]:
        p = 100.0 * self.match / self.pred if self.pred else 0.0
        r = 100.0 * self.match / self.gold if self.gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        out = {"precision": p, "recall": r, "f1": f, "exact_match": 100.0 * self.exact / max(self.sentences, 1),
               "sentences": self.sentences, "matched": self.match, "gold_brackets": self.gold,
               "pred_brackets": self.pred}
        if self.tags_total:
            out["tag_accuracy"] = 100.0 * self.tags_ok / self.tags_total
        return out


def bracket_f1(gold: Sequence, pred: Sequence) -> Dict[str, float]:
    """Corpus scores of parallel lists of trees with ``.spans`` (start, end, label) and ``.tags``."""
    sc = BracketScorer()
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold vs {len(pred)} predicted sentences")
    for k, (g, p) in enumerate(zip(gold, pred), 1):
        if len(g.tags) != len(p.tags):
            raise ValueError(f"sentence {k}: {len(p.tags)} predicted vs {len(g.tags)} gold words")
        sc.add(g.spans, p.spans, g.tags, p.tags)
    return sc.result()


def attachment_scores(gold_heads: Sequence[Sequence[int]], gold_rels: Sequence[Sequence[str]],
                      pred_heads: Sequence[Sequence[int]], pred_rels: Sequence[Sequence[str]],
                      gold_tags: Sequence[Sequence[str]]) -> Dict[str, float]:
    """UAS / LAS (percent) over words whose gold tag is not punctuation (``PUNCT_TAGS``)."""
    total = uas = las = 0
    for gh, gr, ph, pr, tags in zip(gold_heads, gold_rels, pred_heads, pred_rels, gold_tags):
        for a, b, c, d, t in zip(gh, gr, ph, pr, tags):
            if t in PUNCT_TAGS:
                continue
            total += 1
            if a == c:
                uas += 1
                las += int(b == d)
    return {"uas": 100.0 * uas / max(total, 1), "las": 100.0 * las / max(total, 1), "dep_tokens": total}


__all__ = ["evalb_brackets", "BracketScorer", "bracket_f1", "attachment_scores", "PUNCT_TAGS"]
