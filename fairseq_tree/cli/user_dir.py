"""``fairseq-tree-user-dir``: print the directory of the installed plugin, for fairseq's ``--user-dir`` from any
working directory:

    fairseq-train DATA --user-dir "$(fairseq-tree-user-dir)" --task tree_translation --arch tree2seq ...

(fairseq resolves a relative ``--user-dir fairseq_tree`` against the working directory, so that spelling works only
from a checkout's root.) Prints nothing else; imports neither fairseq nor torch.
"""

import argparse
import importlib.util
import os
import sys


def plugin_dir() -> str:
    """-> the absolute directory of the importable ``fairseq_tree`` package (without importing it)."""
    spec = importlib.util.find_spec("fairseq_tree")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("fairseq_tree is not installed in this Python")
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="fairseq-tree-user-dir", description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(plugin_dir())
    return 0


def cli_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli_main()
