"""Replace the constituents of parsed trees by trivial ones, keeping words and POS tags.

    fairseq-tree-trivial-trees IN.trees OUT.trees [--shape right|left|balanced]

A control for tree2seq: the same leaves, the same number of nodes as a binary parse (n - 1), and the
same POS-labelled BPE subtrees after preprocessing, but no syntax. Lines that are empty in IN (skipped
pairs) stay empty, so OUT stays aligned with the corpus. Nodes are labelled ``X``.
"""

import argparse
import sys
from pathlib import Path

from fairseq_tree.evaluation.unsupervised import TRIVIAL_SHAPES, trivial_tree
from fairseq_tree.trees import to_brackets, tree_from_brackets
from fairseq_tree.utils.help_text import ArgumentParser


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--shape", choices=sorted(TRIVIAL_SHAPES), default="right")
    args = ap.parse_args(argv)
    with open(args.input, encoding="utf-8") as fin, open(args.output + ".tmp", "w", encoding="utf-8") as fout:
        for line in fin:
            if not line.strip():
                fout.write("\n")
                continue
            # balanced halves put the smaller half first (split="floor"): this control's trees since it was written
            fout.write(to_brackets(trivial_tree(tree_from_brackets(line), args.shape, split="floor")) + "\n")
    Path(args.output + ".tmp").replace(args.output)


def cli_main() -> None:
    rc = main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
