#!/usr/bin/env python
"""Replace the constituents of parsed trees by trivial ones, keeping words and POS tags.

    python scripts/make_trivial_trees.py IN.trees OUT.trees [--shape right|left|balanced]

A control for tree2seq: the same leaves, the same number of nodes as a binary parse (n - 1), and the
same POS-labelled BPE subtrees after preprocessing, but no syntax. Lines that are empty in IN (skipped
pairs) stay empty, so OUT stays aligned with the corpus. Nodes are labelled ``X``.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairseq_tree.evaluation.unsupervised import balanced, left_branching, right_branching  # noqa: E402
from fairseq_tree.trees import Tree, to_brackets, tree_from_brackets  # noqa: E402


def trivial_spans(n: int, shape: str):
    """The spans of the trivial binary tree over n words (post-order); balanced halves put the smaller half
    first (``split="floor"``, this control's trees since it was written)."""
    if shape == "right":
        return right_branching(n)
    if shape == "left":
        return left_branching(n)
    return balanced(n, split="floor")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--shape", choices=["right", "left", "balanced"], default="right")
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as fin, open(args.output + ".tmp", "w", encoding="utf-8") as fout:
        for line in fin:
            if not line.strip():
                fout.write("\n")
                continue
            t = tree_from_brackets(line)
            spans = trivial_spans(len(t.words), args.shape)
            fout.write(to_brackets(Tree(t.words, t.tags, ["X"] * len(spans), spans)) + "\n")
    Path(args.output + ".tmp").replace(args.output)


if __name__ == "__main__":
    main()
