"""The tree-induction table of ``scripts/recipes/induction_wsj.sh``: each corpus x architecture over its seeds (mean ±
sd of wsj22 / ptb_sample/valid UF1 and wsj22 UAS / UUAS), the trivial baselines once; with ``--png``, wsj22 UF1
and UAS against each corpus's training sentences too (a table and a figure: what more text buys).

    fairseq-tree-report induction WORK > WORK/results.md
    fairseq-tree-report induction WORK --png WORK/corpus_size.png [--at 5000]
"""

import logging
import sys
from pathlib import Path

from fairseq_tree.evaluation.induction_runs import baselines_of, collect, size_points, size_table, table
from fairseq_tree.evaluation.plotting import plot_corpus_size  # matplotlib is imported when a figure is drawn
from fairseq_tree.evaluation.unsupervised import baseline_scores, read_gold
from fairseq_tree.utils.help_text import ArgumentParser


def main(argv=None) -> int:
    p = ArgumentParser(prog="fairseq-tree-report induction", description=__doc__.split("\n\n")[0])
    p.add_argument("work", metavar="WORK", help="the recipe's work directory (WORK/CORPUS/ARCH_sSEED runs)")
    p.add_argument("--png", metavar="PATH", help="write the corpus-size figure (wsj22 UF1 and UAS against the "
                   "training sentences of WORK/CORPUS/text/train.txt) and print its table")
    p.add_argument("--at", type=int, metavar="UPDATES", help="the corpus-size points at each run's validation at "
                   "this many updates (equal budgets; train.log) instead of its selected checkpoint's scores")
    p.add_argument("--gold", metavar="MRG", help="the wsj22 baselines (table and figure) from this treebank "
                   "(wsj22.mrg) when no run has scores.json yet")
    p.add_argument("--gold-dep", metavar="CONLL", help="its dependencies (wsj22.sd.conll): the right chain's UAS")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    work = Path(args.work)
    if not work.is_dir():
        print(f"fairseq-tree-report induction: error: {work}: no such directory", file=sys.stderr)
        return 2
    rows = collect(work)
    baselines = baselines_of(rows)
    if not baselines and args.gold:
        baselines = baseline_scores(read_gold(args.gold, args.gold_dep), seeds=())
    sys.stdout.write(table(rows, baselines))
    if args.png or args.at:
        points = size_points(rows, work, args.at)
        if not points:
            print(f"fairseq-tree-report induction: error: no run under {work} has wsj22 scores"
                  + (f" at {args.at} updates" if args.at else " (induce_wsj22/scores.json)"), file=sys.stderr)
            return 2
        sys.stdout.write("\n" + size_table(points, args.at, baselines))
        if args.png:
            logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its font search, in this CLI only
            where = f"at {args.at:,} updates" if args.at else "selected checkpoints"
            plot_corpus_size(points, args.png, baselines, title=f"wsj22, {where}")
    return 0
