"""``fairseq-tree-parsing-data``: binarize a treebank (and its dependencies) for constituency_parsing.

The library: :mod:`fairseq_tree.data.parsing_data` (``fairseq-tree-parsing-data --help`` lists the options)."""

import sys

from fairseq_tree.data.parsing_data import main as _main


def cli_main() -> None:
    rc = _main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
