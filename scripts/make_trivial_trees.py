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

from fairseq_tree.trees import Tree, distances_to_tree, to_brackets, tree_from_brackets  # noqa: E402


def trivial_spans(n: int, shape: str):
    if shape == "right":
        return distances_to_tree([n - i for i in range(n - 1)])
    if shape == "left":
        return distances_to_tree(list(range(n - 1)))
    # balanced: split in the middle, recursively (largest distance at the middle split point)
    d = [0] * (n - 1)

    def fill(lo, hi, depth):
        if hi - lo < 2:
            return
        mid = (lo + hi) // 2
        d[mid - 1] = -depth
        fill(lo, mid, depth + 1)
        fill(mid, hi, depth + 1)

    fill(0, n, 0)
    return distances_to_tree(d)


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
