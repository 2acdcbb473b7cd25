"""Where a StructFormer checkpoint's dependencies point (issue 49): UAS with each word's head read from its row of
p_D (eq. 17, the paper's and the authors' evaluation) and from its column (the arcs of the model reversed: the
word that puts most of its parent mass on i), the mass eq. 12 drops on the word itself (the root mass), and the
mean height rank of each gold POS (0 = lowest word of its sentence, 1 = highest; in the gold Stanford trees nouns
head their determiners, so a model whose DT rank is above NN's attaches nouns to determiners), and each layer's
mean weight on the parent relation (eq. 13's softmax, over its heads; the rest is on the dependents).

    python scripts/diagnostics/structformer_heads.py CKPT --treebank wsj22.mrg --deps wsj22.sd.conll [--limit N]

Prints one JSON object. CPU, one sentence at a time (a few minutes for wsj22's 1,700 sentences at d 256).
"""

import argparse
import json
from collections import defaultdict

import numpy as np
import torch

from fairseq_tree.evaluation.unsupervised import attachment, read_gold
from fairseq_tree.inference.induce import encode, load
from fairseq_tree.modules.structformer_parser import heads_from_dependency
from fairseq_tree.text.normalize import WORD_TAGS
from fairseq_tree.trees import read_treebank

POS = ("DT", "PRP", "PRP$", "IN", "TO", "CC", "MD", "NN", "NNS", "NNP", "JJ", "RB", "VB", "VBD", "VBZ", "VBN")


def diagnose(model, task, gold, tags):
    """gold: GoldSentence list with heads; tags: their word tags -> the JSON-able dict described above."""
    rows, cols, truth, root_mass, rank = [], [], [], [], defaultdict(list)
    for g, tg in zip(gold, tags):
        n = len(g.words)
        if n < 2:
            continue
        with torch.no_grad():
            _, height, p_D, root, word = model.encoder.parse(encode(task, g.words)[None])
        idx = word[0].nonzero().squeeze(1)
        P = p_D[0][idx][:, idx].double().numpy()
        H = height[0][idx].double().numpy()
        rows.append(heads_from_dependency(P, H))
        cols.append(heads_from_dependency(P.T, H))
        truth.append(g.heads)
        root_mass.append(float(root[0][idx].mean()))
        for t, r in zip(tg, H.argsort().argsort() / (n - 1)):
            rank[t].append(float(r))
    return {"sentences": len(truth), "uas_rows": attachment(truth, rows), "uas_columns": attachment(truth, cols),
            "root_mass_per_word": round(float(np.mean(root_mass)), 3),
            "height_rank": {t: round(float(np.mean(rank[t])), 2) for t in POS if rank[t]},
            "parent_weight": parent_weights(model)}


def parent_weights(model):
    """Each layer's eq. 13 weight on the parent relation, mean over its heads (None without that relation)."""
    if "parent" not in model.encoder.relations:
        return None
    r = model.encoder.relations.index("parent")
    return [round(float(layer.attn.relation_weights.detach()[:, r].mean()), 2) for layer in model.encoder.layers]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--treebank", required=True)
    p.add_argument("--deps", required=True, help="gold dependencies of the treebank (.conll / .conllu)")
    p.add_argument("--data", help="the checkpoint's data-bin, if not where it was trained")
    p.add_argument("--limit", type=int, default=0, help="the first N sentences only")
    args = p.parse_args(argv)
    model, task = load(args.checkpoint, args.data, device="cpu")
    gold = read_gold(args.treebank, args.deps)
    tags = [[t for t in tree.tags if t in WORD_TAGS] for _, tree in read_treebank(args.treebank)]
    if args.limit:
        gold, tags = gold[: args.limit], tags[: args.limit]
    print(json.dumps(diagnose(model, task, gold, tags)))


if __name__ == "__main__":
    main()
