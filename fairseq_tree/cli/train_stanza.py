"""``fairseq-tree-train-stanza``: train stanza's tagger and constituency parser offline on a treebank.

The library: :mod:`fairseq_tree.stanza_train` (``fairseq-tree-train-stanza --help`` lists the options)."""

import sys

from fairseq_tree.stanza_train import main as _main


def cli_main() -> None:
    rc = _main(sys.argv[1:])
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    cli_main()
