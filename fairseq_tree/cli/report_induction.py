"""The tree-induction table of ``scripts/recipes/induction_wsj.sh``: each corpus x architecture over its seeds (mean ±
sd of wsj22 / ptb_sample/valid UF1 and wsj22 UAS / UUAS), the trivial baselines once.

    fairseq-tree-report induction WORK > WORK/results.md
"""

import sys
from pathlib import Path

from fairseq_tree.evaluation.induction_runs import collect, table
from fairseq_tree.utils.help_text import ArgumentParser


def main(argv=None) -> int:
    p = ArgumentParser(prog="fairseq-tree-report induction", description=__doc__.split("\n\n")[0])
    p.add_argument("work", metavar="WORK", help="the recipe's work directory (WORK/CORPUS/ARCH_sSEED runs)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    work = Path(args.work)
    if not work.is_dir():
        print(f"fairseq-tree-report induction: error: {work}: no such directory", file=sys.stderr)
        return 2
    sys.stdout.write(table(collect(work)))
    return 0
