"""Which words an induced dependency file makes heads (issue 49), from the scorer's files alone, so it reads either
code's output: ours (``fairseq-tree-induce``'s ``deps.conllu``) and the authors' (``reference_structformer.sh``'s
``wsj22_U.conll``). Per gold POS: the share of its words that take a dependent, predicted and gold; and the gold
determiner edges (DT whose gold head is a noun, NN*): predicted the gold way (noun -> DT), reversed (DT -> noun) or
neither. In the gold Stanford trees determiners take no dependents; a run that ranks determiners high (the
inverted or undecided heights of some seeds) gives them dependents and reverses these edges.

    python scripts/diagnostics/dependents_by_pos.py --treebank wsj22.mrg --deps wsj22.sd.conll --pred PRED.conll

Prints one JSON object. Sentences and words align by the scorer's rules (``fairseq-tree-score``: ``predicted_heads``).
"""

import argparse
import json
from collections import Counter

from fairseq_tree.evaluation.unsupervised import predicted_heads, read_gold

POS = ("DT", "IN", "TO", "CC", "PRP", "MD", "NN", "NNS", "NNP", "JJ", "RB", "VB", "VBD", "VBZ")


def with_dependents(heads):
    """heads (1-based, 0 root) -> the set of 0-based words some word depends on."""
    return {h - 1 for h in heads if h > 0}


def diagnose(gold, pred_heads):
    """gold: GoldSentence list (tags, heads); pred_heads: heads over each one's words -> the dict described above."""
    words, pred_has, gold_has = Counter(), Counter(), Counter()
    det = Counter()
    for g, ph in zip(gold, pred_heads):
        pd, gd = with_dependents(ph), with_dependents(g.heads)
        for i, tag in enumerate(g.tags):
            words[tag] += 1
            pred_has[tag] += i in pd
            gold_has[tag] += i in gd
            h = g.heads[i] - 1
            if tag == "DT" and h >= 0 and g.tags[h].startswith("NN"):
                det["gold_way" if ph[i] == h + 1 else "reversed" if ph[h] == i + 1 else "neither"] += 1
    n_det = sum(det.values())
    return {"takes_dependents": {t: {"pred": round(pred_has[t] / words[t], 3), "gold": round(gold_has[t] / words[t], 3),
                                     "words": words[t]} for t in POS if words[t]},
            "det_edges": {k: round(det[k] / n_det, 3) for k in ("gold_way", "reversed", "neither")} if n_det else {},
            "det_edge_count": n_det}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--treebank", required=True, help="the gold .mrg (wsj22.mrg)")
    ap.add_argument("--deps", required=True, help="its gold dependencies (wsj22.sd.conll)")
    ap.add_argument("--pred", required=True, help="predicted heads, CoNLL(-U), one sentence per gold sentence")
    args = ap.parse_args(argv)
    gold = read_gold(args.treebank, args.deps)
    try:
        pred = predicted_heads(gold, args.pred, args.treebank)
    except ValueError as e:  # TreeFormatError names FILE:LINE
        raise SystemExit(str(e)) from None
    scored = [g for g in gold if g.index in pred]
    print(json.dumps(diagnose(scored, [pred[g.index] for g in scored])))


if __name__ == "__main__":
    main()
