"""``fairseq-tree-induction-text``: plain text for the induction models (words of treebanks or raw text, normalised).

The library: :mod:`fairseq_tree.data.induction_text` (``fairseq-tree-induction-text --help`` lists the options)."""

import sys

from fairseq_tree.data.induction_text import cli_main as _main


def cli_main() -> None:
    rc = _main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
