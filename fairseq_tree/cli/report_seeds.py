"""Runs under a threshold per group of seeds, each group's rate against the first's (one-sided Fisher exact): how
often a setting fails, e.g. StructFormer's inverted heights (wsj22 UAS under the left chain's 16.7).

    fairseq-tree-report seeds --metric uas --below 16.7 --at 500 [--select-by loss --keep 3] \\
        --group code work/sf/base/wsj/structformer_small_code_s* \\
        --group code+init work/sf/codeinit/wsj/structformer_small_code_s*

A run is a fairseq-train log or a run directory with ``train.log`` (its validation at ``--at`` updates; the last
when ``--at`` is not given), or a ``fairseq-tree-score`` output (the reference recipes' ``scores_U.txt``: its
own number of updates). A run without the metric there is listed, not counted.

``--select-by loss`` adds how often the seed a rule keeps fails: the lowest validation loss of ``--keep`` seeds,
exactly over every choice of that many of the group's runs (a gold-free rule: the masked-LM loss needs no trees).
A reference stage's loss is the last ``valid bpc`` of its ``train_U.log`` (bits a word, fairseq's unit).
"""

import argparse
import sys
from pathlib import Path

from fairseq_tree.evaluation.induction_runs import seed_rows, seed_table
from fairseq_tree.utils.help_text import ArgumentParser


def main(argv=None) -> int:
    p = ArgumentParser(prog="fairseq-tree-report seeds", description=__doc__.split("\n\n")[0],
                       epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--group", nargs="+", action="append", required=True, metavar=("NAME", "RUN"),
                   help="a name, then its runs; the first group is the reference of the p-values")
    p.add_argument("--metric", default="uas", help="the validation metric (default: uas)")
    p.add_argument("--below", type=float, required=True, help="a run counts when its metric is under this")
    p.add_argument("--at", type=int, metavar="UPDATES", help="each log's validation at this many updates")
    p.add_argument("--select-by", metavar="METRIC", help="also the rate at which keeping the best of --keep seeds by "
                   "this metric of the same validation fails (e.g. loss, which needs no gold trees)")
    p.add_argument("--keep", type=int, default=3, metavar="K",
                   help="seeds a --select-by rule chooses from (default: 3)")
    p.add_argument("--select-max", action="store_true", help="--select-by keeps the highest value (default: lowest)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if any(len(g) < 2 for g in args.group):
        p.error("each --group needs a name and at least one run")
    if args.keep < 1:
        p.error(f"--keep must be at least 1, got {args.keep}")
    try:
        rows = seed_rows([(g[0], [Path(r) for r in g[1:]]) for g in args.group], args.metric, args.below, args.at,
                         args.select_by, args.keep, not args.select_max)
    except (FileNotFoundError, ValueError) as e:
        print(f"fairseq-tree-report seeds: error: {e}", file=sys.stderr)
        return 2
    if not rows[0]["values"]:
        print(f"fairseq-tree-report seeds: error: no run of {rows[0]['name']} has {args.metric}"
              + (f" at {args.at} updates" if args.at else ""), file=sys.stderr)
        return 2
    sys.stdout.write(seed_table(rows, args.metric, args.below, args.at, args.select_by, args.keep,
                                not args.select_max))
    return 0
