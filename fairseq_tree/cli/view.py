"""``fairseq-tree-view``: one self-contained HTML page (inline SVG, CSS and script; no network) of trees.

    fairseq-tree-view OUT.html --trees gold.mrg [--pred parsed.txt] [--delete-wrappers]
    fairseq-tree-view OUT.html --sst sst/dev.txt [--pred classes.txt]
    fairseq-tree-view OUT.html --induced out/trees.txt [--deps out/deps.conllu] [--gold wsj22.mrg] [--gold-deps D]
    fairseq-tree-view OUT.html --attention attention.jsonl

``--trees``: a treebank (brackets); with ``--pred`` (one predicted tree per line, as ``fairseq-tree-score`` reads
it) every pair is scored by EVALB's rules and the brackets EVALB counts wrong are marked (missing: gold only;
extra: predicted only), with each sentence's F1 and the corpus scores. ``--sst``: class-labelled trees, classes
coloured; ``--pred``: one predicted class per line (``fairseq-tree-classify``'s output). ``--induced``:
``fairseq-tree-induce``'s trees (and dependencies), against the gold treebank when given. ``--attention``: one
JSON object per line (``fairseq-tree-induce --dump-attention``). Prints the page's size. Library:
:mod:`fairseq_tree.view` (``docs/view.md``).
"""

import argparse
import os
import sys

from fairseq_tree.trees import TreeFormatError
from fairseq_tree.utils.help_text import ArgumentParser
from fairseq_tree.view import page, records


def build(args):
    """-> the :class:`~fairseq_tree.view.page.Page` the arguments ask for."""
    if args.trees:
        if args.pred:
            sents, summary = records.compare_records(args.trees, args.pred, args.delete_wrappers)
            return page("compare", sents, summary, args.title)
        sents = records.treebank_records(args.trees)
        return page("treebank", sents, [["sentences", str(len(sents))]], args.title)
    if args.sst:
        sents, summary = records.sst_records(args.sst, args.pred, args.classes.split(","))
        return page("sst", sents, summary, args.title)
    if args.induced:
        sents, summary = records.induced_records(args.induced, args.deps, args.gold, args.gold_deps)
        return page("induced", sents, summary, args.title)
    sents, summary = records.attention_records(args.attention)
    return page("attention", sents, summary, args.title)


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-view", description=__doc__.split("\n\n")[0])
    p.add_argument("out", metavar="OUT.html", help="the page to write")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--trees", metavar="FILE", help="a treebank (brackets): the gold trees with --pred")
    what.add_argument("--sst", metavar="FILE", help="class-labelled trees (SST format)")
    what.add_argument("--induced", metavar="FILE", help="fairseq-tree-induce's trees.txt")
    what.add_argument("--attention", metavar="FILE", help="attention maps, one JSON object per line")
    p.add_argument("--pred", metavar="FILE", help="predicted trees (--trees) or classes (--sst), one per line")
    p.add_argument("--delete-wrappers", action="store_true",
                   help="also delete ROOT and the empty-label wrapper (as fairseq-tree-score --delete-wrappers)")
    p.add_argument("--classes", default=",".join(records.SST_CLASSES), help="--sst: the class names, comma-separated")
    p.add_argument("--deps", metavar="FILE", help="--induced: induced dependencies (deps.conllu)")
    p.add_argument("--gold", metavar="FILE", help="--induced: the gold treebank (.mrg) the trees were induced from")
    p.add_argument("--gold-deps", metavar="FILE", help="--induced: gold dependencies of the same sentences")
    p.add_argument("--title", help="the page's title")
    return p


def main(argv=None) -> str:
    args = get_parser().parse_args(argv)
    if args.pred and not (args.trees or args.sst):
        raise SystemExit("fairseq-tree-view: error: --pred goes with --trees or --sst")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)  # as fairseq-tree-parse --output
    path = build(args).save(args.out)
    print(f"{path}: {os.path.getsize(path):,} bytes")
    return path


def cli_main(argv=None) -> None:
    try:
        main(argv)
    except (TreeFormatError, ValueError, OSError) as e:
        sys.exit(f"fairseq-tree-view: error: {e}")


if __name__ == "__main__":
    cli_main()
